package desiredcache

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/keel-storage/keel/probes"
	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/reconcile/plan"
	"github.com/keel-storage/keel/schema"
	"github.com/keel-storage/keel/schema/spec"
)

// desiredFiles are every desired state in the repository: the examples and
// the planner's test inputs.
func desiredFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, g := range []string{"../../examples/*.cue", "../../reconcile/plan/testdata/desired/*.cue"} {
		m, err := filepath.Glob(g)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m...)
	}
	if len(out) < 10 {
		t.Fatalf("found only %d desired-state files", len(out))
	}
	// None of them leaves threads at the default "auto": add one that does.
	b, err := os.ReadFile("../../examples/proxmox-vdo-thick.cue")
	if err != nil {
		t.Fatal(err)
	}
	auto := regexp.MustCompile(`(?m)^\s*threads: \{[^}]*\}\n`).ReplaceAll(b, nil)
	if bytes.Equal(auto, b) {
		t.Fatal("proxmox-vdo-thick.cue declares no threads to drop")
	}
	p := filepath.Join(t.TempDir(), "auto-threads.cue")
	if err := os.WriteFile(p, auto, 0o644); err != nil {
		t.Fatal(err)
	}
	return append(out, p)
}

func hosts(t *testing.T) map[string]*model.Host {
	t.Helper()
	snaps, _ := filepath.Glob("../../examples/nodes/*.txtar")
	if len(snaps) == 0 {
		t.Fatal("no bundled node snapshots")
	}
	out := map[string]*model.Host{}
	for _, s := range snaps {
		src, err := hostio.NodeSource(s, time.Minute, hostio.LiveOptions{})
		if err != nil {
			t.Fatal(err)
		}
		h, err := probes.Probe(context.Background(), src)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		out[filepath.Base(s)] = h
	}
	return out
}

// A desired state that went through the cache plans exactly as the freshly
// validated one, against every bundled host.
func TestCachedPlansAsFresh(t *testing.T) {
	hs := hosts(t)
	l := schema.NewLoader()
	for _, p := range desiredFiles(t) {
		c := New(t.TempDir(), "test-build")
		files, err := schema.ReadFiles(p)
		if err != nil {
			t.Fatal(err)
		}
		d, err := l.LoadFiles(files)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if err := c.Put(files, d.Config); err != nil {
			t.Fatal(err)
		}
		got, ok := c.Get(files)
		if !ok {
			t.Fatalf("%s: no entry right after Put", p)
		}
		if got == d.Config {
			t.Fatalf("%s: Get returned the stored pointer, not a decoded copy", p)
		}
		if !reflect.DeepEqual(got, d.Config) {
			t.Errorf("%s: the cached desired state differs from the fresh one:\nfresh  %#v\ncached %#v", p, d.Config, got)
		}
		for name, h := range hs {
			want, have := plan.Plan(d.Config, h), plan.Plan(got, h)
			if !reflect.DeepEqual(want, have) {
				t.Errorf("%s on %s: the cached desired state plans differently:\nfresh  %+v\ncached %+v", filepath.Base(p), name, want, have)
			}
		}
	}
}

func TestKeyCoversContentNameAndBuild(t *testing.T) {
	dir := t.TempDir()
	files := []schema.File{{Name: "/etc/keel/a.cue", Data: []byte("lvm: scanLVs: true\n")}}
	cfg := &spec.Config{LVM: &spec.LVM{}}
	c := New(dir, "build-1")
	if err := c.Put(files, cfg); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Get(files); !ok {
		t.Fatal("miss on the stored files")
	}
	for what, other := range map[string]struct {
		c     *Cache
		files []schema.File
	}{
		"content": {c, []schema.File{{Name: "/etc/keel/a.cue", Data: []byte("lvm: scanLVs: false\n")}}},
		"name":    {c, []schema.File{{Name: "/etc/keel/b.cue", Data: files[0].Data}}},
		"build":   {New(dir, "build-2"), files},
		"files":   {c, append(append([]schema.File{}, files...), schema.File{Name: "/etc/keel/z.cue"})},
	} {
		if _, ok := other.c.Get(other.files); ok {
			t.Errorf("a different %s hit the cache", what)
		}
	}
}

func TestUntrustedOrBrokenEntriesAreMisses(t *testing.T) {
	dir := t.TempDir()
	files := []schema.File{{Name: "x.cue", Data: []byte("{}")}}
	c := New(dir, "b")
	if err := c.Put(files, &spec.Config{}); err != nil {
		t.Fatal(err)
	}
	p := c.path(files)
	if err := os.Chmod(p, 0o666); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Get(files); ok {
		t.Error("a world-writable entry was used")
	}
	if err := os.WriteFile(p, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Get(files); ok {
		t.Error("an entry that does not decode was used")
	}
	var nilCache *Cache
	if _, ok := nilCache.Get(files); ok {
		t.Error("a nil cache hit")
	}
	if err := nilCache.Put(files, &spec.Config{}); err != nil {
		t.Error(err)
	}
}

func TestPutKeepsOnlyTheNewestEntry(t *testing.T) {
	dir := t.TempDir()
	c := New(dir, "b")
	for _, s := range []string{"a", "b", "c"} {
		if err := c.Put([]schema.File{{Name: s}}, &spec.Config{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "README"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c.Put([]schema.File{{Name: "d"}}, &spec.Config{}); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if len(names) != 2 || !strings.HasSuffix(strings.Join(names, " "), "README") && !strings.HasPrefix(strings.Join(names, " "), "README") {
		t.Errorf("entries after four puts: %v, want one entry and the foreign README", names)
	}
	if _, ok := c.Get([]schema.File{{Name: "d"}}); !ok {
		t.Error("the newest entry is gone")
	}
}

// Load stores only valid desired states and returns the loader's error for
// an invalid one, with its position, every time.
func TestLoadNeverStoresAnInvalidState(t *testing.T) {
	dir, etc := t.TempDir(), t.TempDir()
	c := New(dir, "b")
	bad := filepath.Join(etc, "bad.cue")
	if err := os.WriteFile(bad, []byte("lvm: scanLVs: \"yes\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		_, err := c.Load(schema.NewLoader().LoadConfig, etc)
		var se *schema.Error
		if err == nil || !strings.Contains(err.Error(), "bad.cue:1:") || !asSchemaError(err, &se) {
			t.Fatalf("invalid desired state: err %v, want a *schema.Error at bad.cue:1", err)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("the cache holds %d entries after an invalid load", len(ents))
	}
	if err := os.WriteFile(bad, []byte("lvm: scanLVs: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := c.Load(schema.NewLoader().LoadConfig, etc)
	if err != nil || cfg.LVM == nil || cfg.LVM.ScanLVs == nil || !*cfg.LVM.ScanLVs {
		t.Fatalf("valid desired state: %+v, %v", cfg, err)
	}
	again, err := c.Load(nil, etc) // a nil loader would panic on a miss
	if err != nil || !reflect.DeepEqual(again.LVM, cfg.LVM) {
		t.Fatalf("second load: %+v, %v", again, err)
	}
}

func asSchemaError(err error, target **schema.Error) bool {
	e, ok := err.(*schema.Error)
	*target = e
	return ok
}

func TestBuildIDOfThisTestBinary(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	id, err := BuildID(exe)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(id, "/") < 1 || len(id) < 20 {
		t.Errorf("build id %q does not look like a Go build ID (action/content hashes)", id)
	}
	if _, err := BuildID("cache.go"); err == nil {
		t.Error("a Go source file has a build ID")
	}
	if Open("off") != nil {
		t.Error("KEEL_CACHE_DIR=off gave a cache")
	}
	if c := Open(t.TempDir()); c == nil || c.buildID != id {
		t.Errorf("Open: %+v, want this binary's build id", c)
	}
}
