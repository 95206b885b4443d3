package main

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The layers of docs/architecture.md, enforced on what each package reaches
// transitively through keel's own packages, not only on what it imports.

const modulePath = "github.com/keel-storage/keel"

// layer is one row of the layer table: the packages it holds and the keel
// packages they may reach, directly or through each other.
type layer struct {
	// pkgs are the packages of the layer: "dir" alone, or "dir/..." for it
	// and everything below.
	pkgs []string
	// may are the keel packages the layer's packages may reach, besides
	// their own layer.
	may []string
	// pure layers reach no file, process, syscall or clock: no keel package
	// they reach imports impure, calls a wall-clock function, or brings in
	// a module from outside the standard library.
	pure bool
}

var (
	leafLayer    = []string{"lvm/..."}
	modelLayer   = []string{"probes/model", "probes/shell"}
	specLayer    = []string{"schema/spec"}
	plannerLayer = []string{"reconcile/plan/...", "reconcile/activation", "reconcile/state"}
)

// layers lists every package of the module outside e2e, bottom up.
var layers = []layer{
	{pkgs: leafLayer, pure: true},
	{pkgs: specLayer, may: leafLayer, pure: true},
	{pkgs: []string{"schema/desiredfiles"}},
	{pkgs: []string{"schema"}, may: cat(leafLayer, specLayer, []string{"schema/desiredfiles"})},
	{pkgs: modelLayer, may: leafLayer, pure: true},
	{pkgs: []string{"probes/hostio", "probes/internal/..."}, may: cat(leafLayer, modelLayer)},
	{pkgs: []string{"probes"}, may: cat(leafLayer, modelLayer, []string{"probes/hostio", "probes/internal/..."})},
	{pkgs: plannerLayer, may: cat(leafLayer, modelLayer, specLayer), pure: true},
	{pkgs: []string{"reconcile/report"}, may: cat(leafLayer, modelLayer, specLayer, plannerLayer), pure: true},
	{pkgs: []string{"reconcile/atomicfile"}},
	{pkgs: []string{"reconcile/state/statefile"}, may: []string{"reconcile/state", "reconcile/atomicfile"}},
	{pkgs: []string{"reconcile/bootwatch"}, may: cat(leafLayer, modelLayer, specLayer, plannerLayer, []string{"probes/..."})},
	{pkgs: []string{"reconcile/apply/..."}, may: cat(leafLayer, modelLayer, specLayer, plannerLayer, []string{"probes/...", "reconcile/atomicfile", "reconcile/state/statefile"})},
	// Test support: what tests share, never imported by keel's code.
	{pkgs: testSupport, may: []string{"..."}},
	// Development programs make runs on the source tree, never part of keel.
	{pkgs: devTools},
	{pkgs: []string{"reconcile/converge"}, may: []string{"lvm/...", "schema/...", "probes/...", "reconcile/..."}},
	// The programs' shared plumbing: the journal, systemd's notify socket,
	// the unit's nice, the desired-state cache. No CUE, so that keel-boot
	// stays small.
	{pkgs: []string{"internal/logging", "internal/notify", "internal/bootunit"}},
	{pkgs: []string{"internal/desiredcache"}, may: cat(leafLayer, specLayer, []string{"schema/desiredfiles", "reconcile/atomicfile"})},
	// keel-boot, the boot's fast path, reaches no CUE (TestBootBinaryStaysSmall).
	{pkgs: []string{"cmd/keel-boot"}, may: cat(leafLayer, modelLayer, specLayer, plannerLayer,
		[]string{"probes/...", "schema/desiredfiles", "reconcile/bootwatch", "reconcile/atomicfile", "internal/..."})},
	{pkgs: []string{"cmd/..."}, may: []string{"..."}},
	{pkgs: []string{"packaging/..."}, may: []string{"lvm/...", "schema/...", "probes/...", "reconcile/..."}},
}

// impure are the standard packages a pure layer's keel packages never
// import: files, processes, system calls, the network.
var impure = []string{"os", "os/exec", "os/signal", "syscall", "net", "io/ioutil", "plugin", "unsafe"}

// wallClock are the time functions that read or wait on the clock.
var wallClock = []string{"Now", "Since", "Until", "Sleep", "After", "Tick", "NewTimer", "NewTicker", "AfterFunc"}

// devTools are programs of the build (make mutate): they start go and git,
// and no package imports them.
var devTools = []string{"internal/mutate"}

// testSupport packages may be imported only by tests.
var testSupport = []string{"reconcile/report/reporttest", "reconcile/converge/convergetest", "internal/testenv", "internal/testsock"}

func cat(lists ...[]string) []string { return slices.Concat(lists...) }

// matches reports whether the module-relative package p is one of pats.
func matches(p string, pats []string) bool {
	for _, pat := range pats {
		if pat == "..." || pat == p {
			return true
		}
		if dir, ok := strings.CutSuffix(pat, "/..."); ok && (p == dir || strings.HasPrefix(p, dir+"/")) {
			return true
		}
	}
	return false
}

// pkg is what go list says of one package.
type pkg struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Imports    []string
	Deps       []string
}

// listPackages runs go list over the module (e2e aside) and returns its
// packages by module-relative path.
func listPackages(t *testing.T) map[string]pkg {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH")
	}
	cmd := exec.Command(goTool, "list", "-json", modulePath+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, modulePath), "/")
		if matches(rel, []string{"e2e/..."}) {
			continue
		}
		pkgs[rel] = p
	}
	return pkgs
}

func layerOf(p string) (layer, bool) {
	for _, l := range layers {
		if matches(p, l.pkgs) {
			return l, true
		}
	}
	return layer{}, false
}

// keelDeps returns the module-relative keel packages p reaches.
func keelDeps(p pkg) []string {
	var out []string
	for _, d := range p.Deps {
		if rel, ok := strings.CutPrefix(d, modulePath+"/"); ok {
			out = append(out, rel)
		}
	}
	return out
}

// foreign returns the modules outside the standard library and keel that p
// reaches.
func foreign(p pkg) []string {
	var out []string
	for _, d := range p.Deps {
		first, _, _ := strings.Cut(d, "/")
		if strings.Contains(first, ".") && !strings.HasPrefix(d, modulePath+"/") {
			out = append(out, d)
		}
	}
	return out
}

// clockCalls returns the wall-clock calls in the non-test files of p.
func clockCalls(t *testing.T, p pkg) []string {
	t.Helper()
	var out []string
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(p.Dir, name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		local := ""
		for _, im := range f.Imports {
			if v, _ := strconv.Unquote(im.Path.Value); v == "time" {
				local = "time"
				if im.Name != nil {
					local = im.Name.Name
				}
			}
		}
		if local == "" {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == local && slices.Contains(wallClock, sel.Sel.Name) {
					out = append(out, name+": time."+sel.Sel.Name)
				}
			}
			return true
		})
	}
	return out
}

// Every package sits in a layer and reaches, through keel's packages, only
// the layers it may; a pure layer reaches no file, process, syscall or
// clock; only probes/hostio (and the build's own programs) starts processes; nothing below cmd/ imports
// it; test support is imported by tests alone.
func TestLayers(t *testing.T) {
	pkgs := listPackages(t)
	for rel, p := range pkgs {
		l, ok := layerOf(rel)
		if !ok {
			t.Errorf("%s is in no layer: add it to the table in layers_test.go and docs/architecture.md", rel)
			continue
		}
		for _, d := range keelDeps(p) {
			if !matches(d, l.pkgs) && !matches(d, l.may) {
				t.Errorf("%s reaches %s, which its layer may not", rel, d)
			}
			if matches(d, testSupport) && !matches(rel, testSupport) {
				t.Errorf("%s imports the test support %s", rel, d)
			}
		}
		if slices.Contains(p.Imports, "os/exec") && rel != "probes/hostio" && !matches(rel, devTools) {
			t.Errorf("%s imports os/exec: only probes/hostio starts processes", rel)
		}
		if !l.pure {
			continue
		}
		if f := foreign(p); len(f) > 0 {
			t.Errorf("%s is pure but reaches modules outside the standard library: %s", rel, strings.Join(f, ", "))
		}
		for _, d := range append(keelDeps(p), rel) {
			dp, ok := pkgs[d]
			if !ok {
				continue
			}
			for _, im := range dp.Imports {
				if slices.Contains(impure, im) || strings.HasPrefix(im, "golang.org/x/sys/") || strings.HasPrefix(im, "net/") {
					t.Errorf("%s is pure but reaches %s, which imports %s", rel, d, im)
				}
			}
			for _, c := range clockCalls(t, dp) {
				t.Errorf("%s is pure but reaches %s, which reads the clock (%s)", rel, d, c)
			}
		}
	}
}

// bootHeavy are the modules keel-boot must not link: its point is a start
// beside lvm2's boot activation that reads a fifth of keel's binary.
var bootHeavy = []string{"cuelang.org/", "github.com/prometheus/", "google.golang.org/protobuf/"}

// keel-boot links neither CUE nor the metrics server, through any package.
func TestBootBinaryStaysSmall(t *testing.T) {
	p, ok := listPackages(t)["cmd/keel-boot"]
	if !ok {
		t.Fatal("no cmd/keel-boot")
	}
	for _, d := range p.Deps {
		for _, h := range bootHeavy {
			if strings.HasPrefix(d, h) {
				t.Errorf("cmd/keel-boot reaches %s", d)
			}
		}
	}
}

// The rules catch what they are for: a planner package that imported the
// executor, or read the clock, would be reported.
func TestLayerRulesBite(t *testing.T) {
	l, ok := layerOf("reconcile/plan")
	if !ok || !l.pure {
		t.Fatal("the planner is not in a pure layer")
	}
	for _, d := range []string{"reconcile/apply/executor", "probes/hostio", "reconcile/converge", "cmd/keel", "schema"} {
		if matches(d, l.pkgs) || matches(d, l.may) {
			t.Errorf("the planner may reach %s", d)
		}
	}
	if _, ok := layerOf(path.Join("reconcile", "newpackage")); ok {
		t.Error("a new package under reconcile/ lands in a layer without being placed")
	}
}
