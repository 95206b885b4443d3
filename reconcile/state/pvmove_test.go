package state

import (
	"testing"
	"time"
)

func TestPvmoveRecords(t *testing.T) {
	st := New()
	now := time.Date(2026, 12, 4, 23, 0, 0, 0, time.UTC)
	mv := Pvmove{VG: "kvg", Source: "/dev/sdb", LV: "kvg/vsplit_vdata", Started: now}
	if !st.StartPvmove(mv) || len(st.Pvmoves) != 1 {
		t.Fatalf("first record: %+v", st.Pvmoves)
	}
	// The resume of keel's own move (pvmove /dev/sdb) keeps the record.
	if st.StartPvmove(Pvmove{VG: "kvg", Source: "/dev/sdb", Started: now.Add(time.Hour)}) || st.Pvmoves[0].LV != "kvg/vsplit_vdata" {
		t.Errorf("a resume replaced the record: %+v", st.Pvmoves)
	}
	for _, tc := range []struct {
		name         string
		vg           string
		sources, lvs []string
		own          bool
	}{
		{"keel's", "kvg", []string{"/dev/sdb"}, []string{"kvg/vsplit_vdata"}, true},
		{"another VG", "other", []string{"/dev/sdb"}, []string{"kvg/vsplit_vdata"}, false},
		{"another source", "kvg", []string{"/dev/sdc"}, []string{"kvg/vsplit_vdata"}, false},
		{"another LV from the same source", "kvg", []string{"/dev/sdb"}, []string{"kvg/adm"}, false},
	} {
		if _, own := OwnPvmove(st.Pvmoves, tc.vg, tc.sources, tc.lvs); own != tc.own {
			t.Errorf("%s: own %v, want %v", tc.name, own, tc.own)
		}
	}
	if st.KeepPvmoves(func(Pvmove) bool { return true }) {
		t.Error("keeping every record reports a change")
	}
	if !st.KeepPvmoves(func(Pvmove) bool { return false }) || st.Pvmoves != nil {
		t.Errorf("records after dropping all: %+v", st.Pvmoves)
	}
}
