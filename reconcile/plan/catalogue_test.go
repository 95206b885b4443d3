package plan

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

func TestCatalogueSortedAndUnique(t *testing.T) {
	ids := make([]string, len(Catalogue))
	for i, r := range Catalogue {
		ids[i] = string(r.ID)
		if r.Title == "" || r.Doc == "" {
			t.Errorf("%s: empty title or doc", r.ID)
		}
		if !regexp.MustCompile(`^[a-z]+(\.[a-z_]+)+$`).MatchString(string(r.ID)) {
			t.Errorf("%s: ID is not dotted lowercase", r.ID)
		}
	}
	if !sort.StringsAreSorted(ids) {
		t.Errorf("catalogue not sorted by ID: %v", ids)
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] == ids[i-1] {
			t.Errorf("duplicate ID %s", ids[i])
		}
	}
}

// The issue names these IDs; none may go missing.
func TestCatalogueHasRequiredIDs(t *testing.T) {
	required := strings.Fields(`lvm.scan_lvs lvm.global_filter lvm.devices_file vg.missing vg.incomplete
	vg.inactive vdo.missing vdo.overcommit vdo.threads vdo.max_discard vdo.compression vdo.deduplication
	vdo.slab_remainder vdo.memory vdo.mode vdo.index vdo.usage vdo.dedupe_timeouts vdo.layout.head_off_fast
	vdo.layout.journal_off_fast thin.chunk_size thin.stripe_alignment thin.zeroing thin.metadata_size
	thin.data_usage thin.metadata_usage thin.health thin.on_vdo bcache.missing bcache.tunable
	bcache.cache_mode bcache.state pve.discard_on_remove activation.pvscan_on_lvs`)
	for _, id := range required {
		if _, ok := Lookup(FindingID(id)); !ok {
			t.Errorf("required finding %s not in the catalogue", id)
		}
	}
	if r, _ := Lookup("vdo.layout.journal_off_fast"); r.Severity != Critical {
		t.Errorf("vdo.layout.journal_off_fast is %v, want critical", r.Severity)
	}
}

// docs/findings.md must document exactly the catalogue's IDs, each with the
// same severity.
func TestFindingsDocMatchesCatalogue(t *testing.T) {
	b, err := os.ReadFile("../../docs/findings.md")
	if err != nil {
		t.Fatal(err)
	}
	head := regexp.MustCompile("(?m)^## `([^`]+)`\\s*\n+- \\*\\*Severity:\\*\\* ([a-z]+)")
	doc := map[FindingID]string{}
	for _, m := range head.FindAllStringSubmatch(string(b), -1) {
		if _, dup := doc[FindingID(m[1])]; dup {
			t.Errorf("docs/findings.md documents %s twice", m[1])
		}
		doc[FindingID(m[1])] = m[2]
	}
	if n := strings.Count(string(b), "\n## `"); n != len(doc) {
		t.Errorf("docs/findings.md has %d ID sections but %d with a severity line", n, len(doc))
	}
	for _, r := range Catalogue {
		sev, ok := doc[r.ID]
		if !ok {
			t.Errorf("docs/findings.md does not document %s", r.ID)
			continue
		}
		if sev != r.Severity.String() {
			t.Errorf("%s: docs say %s, catalogue says %s", r.ID, sev, r.Severity)
		}
		delete(doc, r.ID)
	}
	for id := range doc {
		t.Errorf("docs/findings.md documents %s, which is not in the catalogue", id)
	}
}

// idConstants returns the FindingID constants declared in the package's
// non-test files, by name, with their values and doc comments.
func idConstants(t *testing.T) map[string]struct{ id, doc string } {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]struct{ id, doc string }{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				v := spec.(*ast.ValueSpec)
				if typ, ok := v.Type.(*ast.Ident); !ok || typ.Name != "FindingID" {
					continue
				}
				for i, n := range v.Names {
					lit, ok := v.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Errorf("%s: %s is not a string literal", fset.Position(n.Pos()), n.Name)
						continue
					}
					id, _ := strconv.Unquote(lit.Value)
					consts[n.Name] = struct{ id, doc string }{id, v.Doc.Text()}
				}
			}
		}
	}
	return consts
}

// Every FindingID constant has a catalogue entry and a doc comment that
// gives its ID and title, and every catalogue entry has one constant: an ID
// added on one side only fails here, and TestFindingsDocMatchesCatalogue
// holds docs/findings.md to the catalogue.
func TestFindingIDs(t *testing.T) {
	consts := idConstants(t)
	byID := map[FindingID]string{}
	for name, c := range consts {
		id := FindingID(c.id)
		if other, dup := byID[id]; dup {
			t.Errorf("%s and %s are both %s", name, other, id)
		}
		byID[id] = name
		r, ok := Lookup(id)
		if !ok {
			t.Errorf("constant %s (%s) is not in the catalogue", name, id)
			continue
		}
		want := name + " is " + c.id + ": " + r.Title + "."
		if got := strings.Join(strings.Fields(c.doc), " "); got != want {
			t.Errorf("%s: doc comment %q, want %q", name, got, want)
		}
	}
	for _, r := range Catalogue {
		if _, ok := byID[r.ID]; !ok {
			t.Errorf("catalogue entry %s has no FindingID constant", r.ID)
		}
	}
	if len(consts) == 0 {
		t.Fatal("no FindingID constants found")
	}
}

// A finding ID outside the constants would compile (an untyped string
// converts to FindingID), so no Go file of the module may spell one: no
// catalogued ID as a literal, no FindingID conversion of a literal, no
// literal ID in a Finding or Rule. Tests may, to pin the outputs.
func TestNoFindingIDLiterals(t *testing.T) {
	known := map[string]bool{}
	for _, r := range Catalogue {
		known[string(r.ID)] = true
	}
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || p == filepath.Join(root, "reconcile", "plan", "findingid.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		isLit := func(e ast.Expr) bool {
			lit, ok := e.(*ast.BasicLit)
			return ok && lit.Kind == token.STRING
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if v, _ := strconv.Unquote(n.Value); n.Kind == token.STRING && known[v] {
					t.Errorf("%s: literal finding ID %s: use its FindingID constant", fset.Position(n.Pos()), v)
				}
			case *ast.CallExpr:
				if typeName(n.Fun) == "FindingID" && len(n.Args) == 1 && isLit(n.Args[0]) {
					t.Errorf("%s: FindingID of a literal: use a FindingID constant", fset.Position(n.Pos()))
				}
			case *ast.CompositeLit:
				if name := typeName(n.Type); name != "Finding" && name != "Rule" {
					return true
				}
				for _, e := range n.Elts {
					if kv, ok := e.(*ast.KeyValueExpr); ok && isLit(kv.Value) {
						if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "ID" {
							t.Errorf("%s: literal ID in a %s: use a FindingID constant", fset.Position(kv.Pos()), typeName(n.Type))
						}
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// typeName returns the name of a type expression, T or pkg.T ("" for any
// other expression).
func typeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return e.Sel.Name
	}
	return ""
}
