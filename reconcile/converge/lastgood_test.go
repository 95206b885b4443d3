package converge

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/reconcile/apply/executor"
	"github.com/keel-storage/keel/reconcile/plan"
	"github.com/keel-storage/keel/schema"
	"github.com/keel-storage/keel/schema/spec"
)

// A new loop (keel activate at the next boot) falls back to the copy of
// the last desired state that loaded when the one on disk is invalid, and
// keeps config.invalid; without any good load it has nothing to fall back to.
func TestLoadLastGoodAcrossProcesses(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	f := filepath.Join(dir, "desired.cue")
	newLoop := func() *Loop {
		return New([]string{dir}, Wiring{StateDir: state, KeepLastGood: true,
			Source: hostio.Source{Runner: failingRunner{}, FS: hostio.DirFS(t.TempDir())}})
	}
	os.WriteFile(f, []byte("lvm: scanLVs: 7\n"), 0o644)
	first := newLoop()
	if err := first.Load(first.Read()); err == nil {
		t.Fatal("invalid desired state loaded")
	}
	if _, err := first.LoadLastGood(); err == nil || first.Desired() != nil {
		t.Fatalf("a fallback without any good load: %v, %+v", err, first.Desired())
	}

	os.WriteFile(f, []byte("lvm: scanLVs: false\n"), 0o644)
	if err := newLoop().Load(first.Read()); err != nil {
		t.Fatal(err)
	}
	saved := filepath.Join(state, LastGoodFile)
	b, err := os.ReadFile(saved)
	if err != nil || !strings.Contains(string(b), "scanLVs: false") {
		t.Fatalf("copy %q: %v", b, err)
	}
	if fi, _ := os.Stat(saved); fi == nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("copy mode %v", fi)
	}

	os.WriteFile(f, []byte("lvm: scanLVs: 7\n"), 0o644)
	boot := newLoop()
	if err := boot.Load(boot.Read()); err == nil {
		t.Fatal("invalid desired state loaded")
	}
	lg, err := boot.LoadLastGood()
	if err != nil || lg.Path != saved || lg.Saved.IsZero() {
		t.Fatalf("LoadLastGood: %+v %v", lg, err)
	}
	if d := boot.Desired(); d == nil || d.LVM == nil || d.LVM.ScanLVs == nil || *d.LVM.ScanLVs {
		t.Fatalf("in force: %+v", d)
	}
	// The invalid desired state is still reported.
	res, _ := boot.pass(context.Background(), Options{Mode: executor.Mode{DryRun: true}})
	if len(res.Findings) != 1 || res.Findings[0].ID != plan.ConfigInvalid {
		t.Fatalf("findings %+v", res.Findings)
	}
	// The failed load did not overwrite the copy.
	if b2, _ := os.ReadFile(saved); string(b2) != string(b) {
		t.Errorf("copy changed by an invalid load: %q", b2)
	}
}

// A loop that keeps no copy (tests, keel wipe, a replay) writes none.
func TestLoadKeepsNoCopyByDefault(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(dir, "desired.cue"), []byte("lvm: scanLVs: false\n"), 0o644)
	l := New([]string{dir}, Wiring{StateDir: state, Source: hostio.Source{Runner: failingRunner{}, FS: hostio.DirFS(t.TempDir())}})
	if err := l.Load(l.Read()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(state, LastGoodFile)); err == nil {
		t.Error("a copy was written without KeepLastGood")
	}
	if _, err := l.LoadLastGood(); err == nil {
		t.Error("LoadLastGood without KeepLastGood succeeded")
	}
}

// A copy saved from other desired-state paths (keel apply -c of another
// file by hand) is not what a boot with the default paths falls back to.
func TestLoadLastGoodRefusesACopyOfOtherPaths(t *testing.T) {
	dir, other, state := t.TempDir(), t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(other, "x.cue"), []byte("lvm: scanLVs: false\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "desired.cue"), []byte("lvm: scanLVs: 7\n"), 0o644)
	w := Wiring{StateDir: state, KeepLastGood: true, Source: hostio.Source{Runner: failingRunner{}, FS: hostio.DirFS(t.TempDir())}}
	byHand := New([]string{other}, w)
	if err := byHand.Load(byHand.Read()); err != nil {
		t.Fatal(err)
	}
	boot := New([]string{dir}, w)
	if err := boot.Load(boot.Read()); err == nil {
		t.Fatal("invalid desired state loaded")
	}
	if _, err := boot.LoadLastGood(); err == nil || !strings.Contains(err.Error(), "a copy of another desired state ("+other+"), not of "+dir) {
		t.Fatalf("LoadLastGood: %v", err)
	}
	if boot.Desired() != nil {
		t.Errorf("in force: %+v", boot.Desired())
	}
}

// A desired state with a line of txtar's file-name form would not read
// back the same: no copy is kept rather than a wrong one.
func TestSaveLastGoodRefusesWhatDoesNotReadBack(t *testing.T) {
	p := filepath.Join(t.TempDir(), LastGoodFile)
	bad := []schema.File{{Name: "/etc/keel/a.cue", Data: []byte("// x\n-- b.cue --\nlvm: scanLVs: true\n")}}
	if err := saveLastGood(p, []string{"/etc/keel"}, bad); err == nil {
		t.Fatal("kept a copy that does not read back")
	}
	if _, err := os.Stat(p); err == nil {
		t.Error("copy written")
	}
	good := []schema.File{{Name: "/etc/keel/a.cue", Data: []byte("lvm: scanLVs: true")}}
	if err := saveLastGood(p, []string{"/etc/keel"}, good); err != nil {
		t.Fatalf("no final newline: %v", err)
	}
}

// mapCache is a DesiredCache in memory, keyed by the files' names and bytes.
type mapCache struct {
	m    map[string]*spec.Config
	puts int
	last string // the key of the last Put: cmd/keel's cache keeps only it
}

func cacheKey(files []schema.File) string {
	var b strings.Builder
	for _, f := range files {
		b.WriteString(f.Name + "\x00" + string(f.Data) + "\x00")
	}
	return b.String()
}

func (c *mapCache) Get(files []schema.File) (*spec.Config, bool) {
	cfg, ok := c.m[cacheKey(files)]
	return cfg, ok
}

func (c *mapCache) Put(files []schema.File, cfg *spec.Config) error {
	c.puts++
	c.last = cacheKey(files)
	c.m[c.last] = cfg
	return nil
}

// A desired state that loaded but that keel put back the last good one
// over (Restore, after a crash working on it) is not the cache's last
// entry: the one put back is, so that keel-boot, which takes the entry
// for the files on disk, takes none at the next boot.
func TestRestorePutsTheStateBackInTheCache(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "desired.cue")
	cache := &mapCache{m: map[string]*spec.Config{}}
	l := New([]string{dir}, Wiring{Cache: cache, Source: hostio.Source{Runner: failingRunner{}, FS: hostio.DirFS(t.TempDir())}})
	os.WriteFile(f, []byte("lvm: scanLVs: false\n"), 0o644)
	good, err := l.Read()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Load(good, nil); err != nil {
		t.Fatal(err)
	}
	prev := l.InForce()
	os.WriteFile(f, []byte("lvm: scanLVs: true\n"), 0o644)
	if err := l.Load(l.Read()); err != nil {
		t.Fatal(err)
	}
	l.Restore(prev, errors.New("keel crashed working on it"))
	if cache.last != cacheKey(good) {
		t.Errorf("after Restore the cache's last entry is %q, want the good state's %q", cache.last, cacheKey(good))
	}
	if d := l.Desired(); d == nil || d.LVM == nil || d.LVM.ScanLVs == nil || *d.LVM.ScanLVs {
		t.Errorf("after Restore the desired state in force is %+v, want scanLVs false", d)
	}
}

// A loop with a cache keeps each desired state that loads and takes an
// unchanged one from it without evaluating it (keel activate at boot); an
// invalid one is evaluated every time and never kept, and the fallback to
// the last good copy is served by the cache too.
func TestLoadThroughCache(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	f := filepath.Join(dir, "desired.cue")
	cache := &mapCache{m: map[string]*spec.Config{}}
	newLoop := func() *Loop {
		return New([]string{dir}, Wiring{StateDir: state, KeepLastGood: true, Cache: cache,
			Source: hostio.Source{Runner: failingRunner{}, FS: hostio.DirFS(t.TempDir())}})
	}
	os.WriteFile(f, []byte("lvm: scanLVs: false\n"), 0o644)
	first := newLoop()
	if err := first.Load(first.Read()); err != nil {
		t.Fatal(err)
	}
	if cache.puts != 1 || len(cache.m) != 1 {
		t.Fatalf("after a good load: %d puts, %d entries", cache.puts, len(cache.m))
	}
	evaluated := first.Desired()
	if d := evaluated; d == nil || d.LVM == nil || d.LVM.ScanLVs == nil || *d.LVM.ScanLVs {
		t.Fatalf("in force: %+v", d)
	}

	// The entry is what a hit gives: a loop that evaluated would hold a
	// config of its own, not this one.
	files, err := first.Read()
	if err != nil {
		t.Fatal(err)
	}
	stored := &spec.Config{}
	cache.m[cacheKey(files)] = stored
	second := newLoop()
	if err := second.Load(second.Read()); err != nil {
		t.Fatal(err)
	}
	if second.Desired() != stored || cache.puts != 1 {
		t.Fatalf("an unchanged desired state was evaluated again (%d puts)", cache.puts)
	}

	os.WriteFile(f, []byte("lvm: scanLVs: 7\n"), 0o644)
	boot := newLoop()
	if err := boot.Load(boot.Read()); err == nil {
		t.Fatal("invalid desired state loaded")
	}
	if cache.puts != 1 || len(cache.m) != 1 {
		t.Fatalf("an invalid desired state was kept: %d puts, %d entries", cache.puts, len(cache.m))
	}
	if _, err := boot.LoadLastGood(); err != nil {
		t.Fatal(err)
	}
	if boot.Desired() != stored {
		t.Fatalf("the last good copy was evaluated again: %+v", boot.Desired())
	}
}
