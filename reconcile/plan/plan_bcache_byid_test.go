package plan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-storage/keel/schema"
)

// A backing device declared by its /dev/disk/by-id path, as the examples do,
// resolves to the registered bcache device even though it is not an LVM PV.
func TestBcacheBackingByID(t *testing.T) {
	h := replayHost(t, "bcache")
	if len(h.Bcache) != 1 {
		t.Fatalf("want one bcache device in the snapshot, have %d", len(h.Bcache))
	}
	var uuid, id string
	for u, b := range h.Bcache {
		if len(b.BackingByID) == 0 {
			t.Fatalf("bcache %s: no by-id name for backing device %s", u, b.Backing)
		}
		uuid, id = u, b.BackingByID[0]
	}
	tmpl, err := os.ReadFile(filepath.Join("testdata", "desired", "bcache.cue.in"))
	if err != nil {
		t.Fatal(err)
	}
	cset := h.Bcache[uuid].CacheSet
	src := strings.NewReplacer("@BACKING@", "/dev/disk/by-id/"+id, "@CSET@", cset).Replace(string(tmpl))
	path := filepath.Join(t.TempDir(), "bcache.cue")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := schema.NewLoader().Load(path)
	if err != nil {
		t.Fatal(err)
	}
	byID := Plan(d.Config, h)
	byUUID := Plan(loadDesired(t, "bcache", h), h)
	if got, want := keys(byID.Findings), keys(byUUID.Findings); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("declared by %s: findings %q; declared by UUID: %q", id, got, want)
	}
	for _, f := range byID.Findings {
		if f.ID == "bcache.missing" {
			t.Errorf("by-id backing not resolved: %s %s", f.ID, f.Message)
		}
	}
}
