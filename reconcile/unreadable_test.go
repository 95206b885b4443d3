package reconcile

import (
	"maps"
	"slices"
	"testing"
)

// A declared VG that LVM does not report while the kernel runs its LVs: on
// a disk, a failing PV (vg.unreadable, fault-eio in TestPlanScenarios); on
// an LV with scan_lvs 0, LVM's configuration hiding it (an lvm.conf reset
// by a package upgrade), which stays vg.missing with lvm.scan_lvs saying
// why. The pve capture has vdovg on vdolab/vdolv with vdovg-vm--100--disk--0
// running; LVM's view without vdovg is what scan_lvs 0 gives.
func TestUnreadableVGNotForHiddenStackedVG(t *testing.T) {
	h := replayHost(t, "pve")
	d := loadDesired(t, "vdo-thick", h)
	if _, ok := h.DM["vdovg-vm--100--disk--0"]; !ok {
		t.Fatal("the pve capture no longer runs vdovg-vm--100--disk--0")
	}
	hidden := *h
	hidden.VGs = maps.Clone(h.VGs)
	delete(hidden.VGs, "vdovg")
	for _, scan := range []string{"0", "1"} {
		hh := hidden
		hh.LVMConfig.Values = maps.Clone(h.LVMConfig.Values)
		hh.LVMConfig.Values["devices/scan_lvs"] = scan
		var ids []string
		for _, f := range PlanWith(d, &hh, Memory{}).Findings {
			if f.Object == "vdovg" {
				ids = append(ids, f.ID)
			}
		}
		switch {
		case scan == "0" && (slices.Contains(ids, "vg.unreadable") || !slices.Contains(ids, "vg.missing")):
			t.Errorf("scan_lvs 0: findings on vdovg %q, want vg.missing (LVM's configuration hides it), not vg.unreadable", ids)
		case scan == "1" && !slices.Contains(ids, "vg.unreadable"):
			t.Errorf("scan_lvs 1: findings on vdovg %q, want vg.unreadable (its LVs run, LVM reads no VG)", ids)
		}
	}
}
