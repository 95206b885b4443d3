package probes

import (
	"context"
	"testing"

	"github.com/keel-storage/keel/probes/hostio"
)

// The thin pool the guest made (e2e/capture-fixtures.sh thin-vdodata, kept
// beside the planner's own captures) with lvcreate --type thin-pool --pooldatavdo
// y names the VDO pool under its data LV; the thin pools of the thin
// capture, on plain extents, name none.
func TestThinPoolDataVDO(t *testing.T) {
	for _, c := range []struct{ dir, snapshot, pool, want string }{
		{sharedCfgSnapshots, "thin-vdodata", "tvdo/tpv", "tvdo/tpv_vpool0"},
		{"testdata/snapshots/", "thin", "thinvg/tp", ""},
	} {
		s, err := hostio.ReadSnapshotFile(c.dir + c.snapshot + ".txtar")
		if err != nil {
			t.Fatal(err)
		}
		h, err := Probe(context.Background(), hostio.Replay(s))
		if err != nil {
			t.Fatal(err)
		}
		tp := h.ThinPools[c.pool]
		if tp == nil {
			t.Fatalf("%s: no thin pool %s", c.snapshot, c.pool)
		}
		if tp.DataVDO != c.want {
			t.Errorf("%s: %s data VDO %q, want %q", c.snapshot, c.pool, tp.DataVDO, c.want)
		}
		if c.want != "" && h.VDOPools[c.want] == nil {
			t.Errorf("%s: VDO pool %s not modelled", c.snapshot, c.want)
		}
	}
}
