package testenv

import (
	"fmt"
	"go/build"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that records how the test would have ended.
type recorder struct {
	testing.TB
	ended string // "", "fatal" or "skip"
	msg   string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.ended, r.msg = "fatal", fmt.Sprintf(format, args...)
}
func (r *recorder) Skipf(format string, args ...any) {
	r.ended, r.msg = "skip", fmt.Sprintf(format, args...)
}

// A root test runs as root whatever the variable says, skips for a user
// by default and fails for a user when CI requires root tests.
func TestNeedRoot(t *testing.T) {
	for _, tt := range []struct {
		euid int
		mode string
		want string
	}{
		{0, "", ""},
		{0, RootTestsRequired, ""},
		{1000, "", "skip"},
		{1000, "other", "skip"},
		{1000, RootTestsRequired, "fatal"},
	} {
		r := &recorder{TB: t}
		needRoot(r, "loop devices", tt.euid, tt.mode)
		if r.ended != tt.want {
			t.Errorf("euid %d, %s=%q: ended %q (%s), want %q", tt.euid, RootTestsVar, tt.mode, r.ended, r.msg, tt.want)
		}
		if r.ended != "" && !strings.Contains(r.msg, "loop devices") {
			t.Errorf("euid %d: message %q does not say what needs root", tt.euid, r.msg)
		}
	}
}

// A test needing an outside program gets its path when it is there, skips
// without it by default and fails without it when the tools are required.
func TestNeedTool(t *testing.T) {
	found := func() (string, bool) { return "/usr/bin/promtool", true }
	missing := func() (string, bool) { return "", false }
	for _, tt := range []struct {
		find func() (string, bool)
		mode string
		want string
	}{
		{found, "", ""},
		{found, ToolsRequired, ""},
		{missing, "", "skip"},
		{missing, "0", "skip"},
		{missing, ToolsRequired, "fatal"},
	} {
		r := &recorder{TB: t}
		p := needTool(r, "promtool", "apt-get install prometheus", tt.mode, tt.find)
		if r.ended != tt.want {
			t.Errorf("%s=%q: ended %q (%s), want %q", ToolsVar, tt.mode, r.ended, r.msg, tt.want)
		}
		if r.ended == "" && p != "/usr/bin/promtool" {
			t.Errorf("%s=%q: path %q", ToolsVar, tt.mode, p)
		}
		if r.ended != "" && (!strings.Contains(r.msg, "promtool not found") || !strings.Contains(r.msg, "apt-get install prometheus")) {
			t.Errorf("%s=%q: message %q does not name the tool and how to install it", ToolsVar, tt.mode, r.msg)
		}
	}
}

// Every package with tests imports testenv in them, so that every test
// binary accepts -update and `go test ./... -update` runs (a binary
// without the flag fails on it).
func TestEveryTestImportsTestenv(t *testing.T) {
	const self = "github.com/keel-storage/keel/internal/testenv"
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if p != root && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_")) {
			return filepath.SkipDir
		}
		pkg, err := build.ImportDir(p, 0)
		if err != nil || len(pkg.TestGoFiles)+len(pkg.XTestGoFiles) == 0 {
			return nil // no Go files for this build (e2e needs its tag), or no tests
		}
		rel, _ := filepath.Rel(root, p)
		if filepath.ToSlash(rel) == "internal/testenv" {
			return nil
		}
		imports := append(append([]string{}, pkg.TestImports...), pkg.XTestImports...)
		for _, im := range imports {
			if im == self {
				return nil
			}
		}
		t.Errorf("the tests of %s do not import %s: go test ./... -update would fail there (add a file with a blank import)", rel, self)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
