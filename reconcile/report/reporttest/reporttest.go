// Package reporttest holds test support for keel's reports: the check of a
// JSON report against #Report in schema/report.cue, which every consumer of
// `keel check --format json` relies on.
package reporttest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"
)

// SchemaPath is schema/report.cue in the source tree this package was
// built from.
func SchemaPath() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "schema", "report.cue")
}

// ValidateJSON fails t unless js validates against #Report.
func ValidateJSON(t testing.TB, js []byte) {
	t.Helper()
	src, err := os.ReadFile(SchemaPath())
	if err != nil {
		t.Fatal(err)
	}
	ctx := cuecontext.New()
	s := ctx.CompileBytes(src, cue.Filename("schema/report.cue"))
	if err := s.Err(); err != nil {
		t.Fatalf("schema/report.cue: %s", cueerrors.Details(err, nil))
	}
	def := s.LookupPath(cue.ParsePath("#Report"))
	data := ctx.CompileBytes(js, cue.Filename("report.json"))
	if err := data.Err(); err != nil {
		t.Fatalf("report JSON does not compile: %v", err)
	}
	if err := def.Unify(data).Validate(cue.Concrete(true)); err != nil {
		t.Fatalf("report JSON does not validate against #Report: %s\n%s", cueerrors.Details(err, nil), js)
	}
}
