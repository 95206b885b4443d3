package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// envReaders are the functions that read the process environment.
var envReaders = map[string]map[string]bool{
	"os":      {"Getenv": true, "LookupEnv": true, "Environ": true, "ExpandEnv": true},
	"syscall": {"Getenv": true, "Environ": true},
}

// envAllowed lists, by file (slash path from the module root), the files
// outside package main allowed to read the environment, each with why.
var envAllowed = map[string]string{
	// KEEL_ROOT_TESTS: whether a root-only test may skip. Test support,
	// imported by tests alone (TestLayers), never by keel itself.
	"internal/testenv/testenv.go": "KEEL_ROOT_TESTS",
}

// TestEnvironmentReadOnlyInMain holds that only main packages read the
// environment: a library takes each setting as a parameter or option, so
// its behaviour is what its caller passes, in tests as on a host. e2e (the
// suite's own switches) and test files are out of scope. Handing the
// environment on to a child process (cmd.Env = append(os.Environ(), ...))
// reads no setting and is allowed.
func TestEnvironmentReadOnlyInMain(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if rel == "e2e" || name == "testdata" || name == "vendor" || (rel != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_"))) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if f.Name.Name == "main" {
			return nil
		}
		if _, ok := envAllowed[rel]; ok {
			return nil
		}
		for _, sel := range envReads(f) {
			t.Errorf("%s: %s reads the environment in a library package; read it in cmd/keel and pass the value in", fset.Position(sel.Pos()), sel.X.(*ast.Ident).Name+"."+sel.Sel.Name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// envReads returns the references in f to an envReaders function (a call
// or a function value), but for os.Environ in a value assigned to a field
// named Env (a child's environment).
func envReads(f *ast.File) []*ast.SelectorExpr {
	local := map[string]string{} // the name a file uses for a package -> its path
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if envReaders[p] == nil {
			continue
		}
		name := p
		if imp.Name != nil {
			name = imp.Name.Name
		}
		local[name] = p
	}
	if len(local) == 0 {
		return nil
	}
	passedOn := map[*ast.SelectorExpr]bool{}
	var out []*ast.SelectorExpr
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			if len(n.Lhs) != len(n.Rhs) {
				return true
			}
			for i, lhs := range n.Lhs {
				if sel, ok := lhs.(*ast.SelectorExpr); !ok || sel.Sel.Name != "Env" {
					continue
				}
				ast.Inspect(n.Rhs[i], func(n ast.Node) bool {
					if sel, ok := n.(*ast.SelectorExpr); ok && refersTo(sel, local) == "os.Environ" {
						passedOn[sel] = true
					}
					return true
				})
			}
		case *ast.SelectorExpr:
			if r := refersTo(n, local); r != "" && !passedOn[n] {
				out = append(out, n)
			}
		}
		return true
	})
	return out
}

// refersTo returns "pkg.Func" when sel names one of envReaders, with local
// mapping the file's names for packages to their paths; "" otherwise.
func refersTo(sel *ast.SelectorExpr, local map[string]string) string {
	id, ok := sel.X.(*ast.Ident)
	if !ok || !envReaders[local[id.Name]][sel.Sel.Name] {
		return ""
	}
	return local[id.Name] + "." + sel.Sel.Name
}
