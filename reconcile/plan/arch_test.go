package plan

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/keel-storage/keel/"

// imports returns the imports of the non-test Go files of the package in
// dir (relative to the repository root), each with the file importing it.
func imports(t *testing.T, dir string) map[string][]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("%s: no Go files (%v)", dir, err)
	}
	out := map[string][]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range af.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			out[p] = append(out[p], filepath.Base(f))
		}
	}
	return out
}

// packages lists every package directory of the module outside e2e.
func packages(t *testing.T) []string {
	t.Helper()
	var dirs []string
	seen := map[string]bool{}
	err := filepath.WalkDir("..", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "e2e" || strings.HasPrefix(d.Name(), ".")) && p != ".." {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			dir, _ := filepath.Rel("..", filepath.Dir(p))
			if !seen[dir] {
				seen[dir] = true
				dirs = append(dirs, dir)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// pureForPlanner are the packages below reconcile whose planning functions
// the planner calls: activation's order and rules, the removal rules of
// reconcile/apply/wipe (never its Remover), and the records and identity rule of
// reconcile/state (never its Store: the caller reads the file).
var pureForPlanner = map[string]bool{"reconcile/activation": true, "reconcile/apply/wipe": true, "reconcile/state": true}

// The import rules of docs/architecture.md, enforced.
func TestImportRules(t *testing.T) {
	for _, dir := range packages(t) {
		for imp, files := range imports(t, dir) {
			inModule := strings.TrimPrefix(imp, module)
			var why string
			switch {
			case imp == "os/exec" && dir != "probes/hostio":
				why = "only hostio.ExecRunner starts processes"
			case imp == "os/exec" && (len(files) != 1 || files[0] != "runner.go"):
				why = "only runner.go starts processes"
			case dir == "probes/model" && inModule != imp && inModule != "lvm" && !strings.HasPrefix(inModule, "lvm/"):
				why = "the observed model is plain data: it imports only the LVM knowledge"
			case dir == "probes/hostio" && inModule != imp && inModule != "probes/internal/dmioctl":
				why = "the process layer sits below the readers and the model"
			case strings.HasPrefix(dir, "probes/internal/") && inModule != imp && inModule != "probes/model":
				why = "the probe's internal leaves import nothing of keel but the model"
			case strings.HasPrefix(inModule, "cmd/") && !strings.HasPrefix(dir, "cmd/"):
				why = "cmd/ is the top: nothing below imports it"
			case (dir == "reconcile" || dir == "reconcile/activation") && (imp == "os" || imp == "time" || imp == "os/exec" ||
				(strings.HasPrefix(inModule, "reconcile/") && !pureForPlanner[inModule])):
				why = "the planner is pure: no files, no clock, no executor"
			case (strings.HasPrefix(dir, "probes") || strings.HasPrefix(dir, "schema")) && strings.HasPrefix(inModule, "reconcile"):
				why = "probes and schema sit below reconcile"
			case strings.HasPrefix(dir, "schema") && strings.HasPrefix(inModule, "probes"):
				why = "the schema knows nothing of hosts"
			case strings.HasPrefix(dir, "reconcile/") && !strings.HasPrefix(dir, "reconcile/converge") && strings.HasPrefix(inModule, "reconcile/converge"):
				why = "the loop sits above the planner, executor and appliers"
			}
			if why != "" {
				t.Errorf("%s imports %s (%s): %s", dir, imp, strings.Join(files, ", "), why)
			}
		}
	}
}
