package probes

import (
	"context"
	"strings"
	"testing"

	"github.com/keel-storage/keel/probes/hostio"
)

// TestPoolStatusKey reads the pools of guest captures: a thin pool's data
// and metadata use in whole percent and its mode words, a VDO volume's
// states and use; a read-only VDO pool (fault-readonly) gives another key
// than the healthy one (fault-base); the key ignores what is no pool.
func TestPoolStatusKey(t *testing.T) {
	key := func(path string) string {
		t.Helper()
		s, err := hostio.ReadSnapshotFile(path)
		if err != nil {
			t.Fatal(err)
		}
		k, err := PoolStatusKey(context.Background(), hostio.Replay(s))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return k
	}
	thin := key("testdata/snapshots/thin.txtar")
	for _, want := range []string{
		"thinvg-tp-tpool thin-pool meta 10% data 0% ro=false out_of_data_space=false needs_check=false",
		"thinvg-tpbad thin-pool meta 10% data 0% ro=false out_of_data_space=false needs_check=false",
	} {
		if !strings.Contains(thin, want) {
			t.Errorf("thin: key\n%s\nlacks %q", thin, want)
		}
	}
	if strings.Contains(thin, "linear") || strings.Contains(thin, " thin ") {
		t.Errorf("thin: key holds devices that are no pools:\n%s", thin)
	}
	base := key("../reconcile/plan/testdata/snapshots/fault-base.txtar")
	ro := key("../reconcile/plan/testdata/snapshots/fault-readonly.txtar")
	if !strings.Contains(base, "fvg-vpool-vpool vdo normal recovering=false index online compression online used 40%") {
		t.Errorf("fault-base: key %q", base)
	}
	if base == ro || !strings.Contains(ro, "read-only") {
		t.Errorf("a read-only pool gives the healthy pool's key: %q, %q", base, ro)
	}
}
