package converge

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/reconcile/plan"
	"github.com/keel-storage/keel/reconcile/state/statefile"
)

// TestPvmoveMemory: the pvmove keel starts is in its state before the
// command runs, stays while LVM reports its mirror LV (or its VG cannot be
// read whole), and is forgotten once the move is gone.
func TestPvmoveMemory(t *testing.T) {
	store := statefile.Store{Path: filepath.Join(t.TempDir(), "state.json")}
	l := &Loop{state: store, log: hclog.NewNullLogger()}
	argv := []string{"pvmove", "-n", "kvg/vsplit_vdata", "/dev/sda:327-359", "/dev/mapper/kslow"}
	a := plan.Action{ID: "vdo.layout.journal_off_fast:kvg/vsplit", Object: "kvg/vsplit", Commands: [][]string{argv}}
	if err := l.startingPvmove(a, []string{"lvchange", "-ay", "kvg/vsplit"}); err != nil {
		t.Fatal(err)
	}
	if st, _ := store.Load(); len(st.Pvmoves) != 0 {
		t.Fatalf("a command that is not a pvmove recorded %+v", st.Pvmoves)
	}
	if err := l.startingPvmove(a, argv); err != nil {
		t.Fatal(err)
	}
	st, err := store.Load()
	if err != nil || len(st.Pvmoves) != 1 {
		t.Fatalf("records %+v, %v", st, err)
	}
	if r := st.Pvmoves[0]; r.VG != "kvg" || r.Source != "/dev/sda" || r.LV != "kvg/vsplit_vdata" || !slices.Equal(r.Argv, argv) || r.Started.IsZero() {
		t.Fatalf("record %+v", r)
	}
	moving := &model.Host{VGs: map[string]*model.VG{"kvg": {Name: "kvg", Attr: "wz--n-"}}, LVs: map[string]*model.LV{
		"kvg/pvmove0": {VG: "kvg", Name: "pvmove0", FullName: "kvg/pvmove0", Attr: "p-C-aom---",
			Segments: []model.Segment{{Type: "mirror", Devices: []model.SegmentDev{{Name: "/dev/sda", IsPV: true}, {Name: "/dev/mapper/kslow", IsPV: true}}}}},
	}}
	partial := &model.Host{VGs: map[string]*model.VG{"kvg": {Name: "kvg", Attr: "wz-pn-"}}, LVs: map[string]*model.LV{}}
	done := &model.Host{VGs: map[string]*model.VG{"kvg": {Name: "kvg", Attr: "wz--n-"}}, LVs: map[string]*model.LV{}}
	for _, tc := range []struct {
		name string
		h    *model.Host
		want int
	}{{"in progress", moving, 1}, {"VG partial", partial, 1}, {"ended", done, 0}} {
		l.seePvmoves(tc.h)
		st, err := store.Load()
		if err != nil || len(st.Pvmoves) != tc.want || len(l.mem.Pvmoves) != tc.want {
			t.Errorf("%s: %d records in the state, %d in memory (%v); want %d", tc.name, len(st.Pvmoves), len(l.mem.Pvmoves), err, tc.want)
		}
	}
}
