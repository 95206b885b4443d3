package state

import (
	"testing"
	"time"
)

// TestSeeSuspended: a quiet device is recorded once and keeps its first
// quiet moment; a process on its VG, or a resume, drops the record.
func TestSeeSuspended(t *testing.T) {
	st := New()
	t0 := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	if !st.SeeSuspended(map[string]bool{"vg-a": true, "vg-b": false}, t0) {
		t.Fatal("first sight not recorded")
	}
	if _, ok := st.Suspended["vg-b"]; ok {
		t.Error("a device with an LVM command on its VG recorded as quiet")
	}
	if st.SeeSuspended(map[string]bool{"vg-a": true}, t0.Add(time.Minute)) || !st.Suspended["vg-a"].QuietSince.Equal(t0) {
		t.Errorf("quiet since moved: %v", st.Suspended["vg-a"])
	}
	if !st.SeeSuspended(map[string]bool{"vg-a": false}, t0.Add(2*time.Minute)) || len(st.Suspended) != 0 {
		t.Errorf("a process on the VG kept the record: %v", st.Suspended)
	}
	st.SeeSuspended(map[string]bool{"vg-a": true}, t0)
	if !st.SeeSuspended(nil, t0) || len(st.Suspended) != 0 {
		t.Errorf("a resumed device kept its record: %v", st.Suspended)
	}
}

// TestHoldInForce: a hold lapses at its Until; without one, or without a
// clock, it holds.
func TestHoldInForce(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	h := Hold{Reason: "drain", Until: t0}
	if !h.InForce(t0.Add(-time.Second)) || h.InForce(t0) || !h.InForce(time.Time{}) || !(Hold{}).InForce(t0) {
		t.Error("InForce")
	}
}
