package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bootCostTargets runs the boot-cost part of the report on a copy of the
// testdata file name (lines TestBootCost printed in the guest) and returns
// its targets by name.
func bootCostTargets(t *testing.T, name string) map[string]target {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	raw := t.TempDir()
	if err := os.WriteFile(filepath.Join(raw, "bootcost.txt"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	r := &report{raw: raw, meta: map[string]string{}}
	r.bootCost()
	got := map[string]target{}
	for _, tg := range r.targets {
		got[tg.name] = tg
	}
	return got
}

// TestBootCostAnchored: the guests' activation counts from the anchor
// (guests_us - anchor_us: keel 14.17 s, bare 14.93 s) as well as from the
// boot, each judged against 5 % of the bare unit's start to end.
func TestBootCostAnchored(t *testing.T) {
	got := bootCostTargets(t, "bootcost-anchored.txt")
	a, ok := got["pve-guests reached after lvm2's first activation unit, ~50 LVs"]
	if !ok {
		t.Fatalf("no anchored target; got %v", got)
	}
	if a.status != statusPass || !strings.Contains(a.measured, "14.2 s vs 14.9 s (−760 ms; bound 703 ms)") {
		t.Errorf("anchored target = %+v", a)
	}
	if g := got["pve-guests reached, ~50 LVs"]; g.status != statusPass || !strings.Contains(g.measured, "33.2 s vs 35.6 s") {
		t.Errorf("guests from the boot = %+v", g)
	}
}

// TestBootCostUnanchored: lines recorded before the anchor still give the
// other targets, and the anchored one is reported as not measured.
func TestBootCostUnanchored(t *testing.T) {
	got := bootCostTargets(t, "bootcost-unanchored.txt")
	a := got["pve-guests reached after lvm2's first activation unit, 2000 LVs"]
	if a.status != statusNone || !strings.Contains(a.measured, "no anchor") {
		t.Errorf("anchored target = %+v", a)
	}
	if r := got["keel-activate start to READY, 2000 LVs"]; r.status == statusNone {
		t.Errorf("start to READY not measured: %+v", r)
	}
}
