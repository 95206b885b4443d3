package plan

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
				ids = append(ids, string(f.ID))
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

// On the fault-eio capture (an error table swapped under fvg's PV while its
// VDO pool ran; the pool turned read-only) vg.unreadable names what the
// kernel still runs, the pool's read-only mode and the failing device under
// it, and its remedy names that device.
func TestUnreadableVGNamesWhatRuns(t *testing.T) {
	h := replayHost(t, "fault-eio")
	var got *Finding
	for _, f := range PlanWith(loadDesired(t, "faults", h), h, Memory{}).Findings {
		if f.ID == "vg.unreadable" {
			got = &f
		}
	}
	if got == nil {
		t.Fatal("no vg.unreadable on fault-eio")
	}
	const wantMsg = "LVM reads no VG fvg, yet the kernel runs its LVs (fvg-vlv, fvg-vpool-vpool (vdo read-only), fvg-vpool_vdata) on /dev/mapper/flt (error target): a PV under it fails or is gone"
	if got.Message != wantMsg {
		t.Errorf("message\n got %q\nwant %q", got.Message, wantMsg)
	}
	const wantRemedy = "find the failing disk (dmesg; lsblk -s /dev/mapper/flt; smartctl -a on the disk it lists) and bring it back; do not pvcreate or vgcreate on it; keel plans nothing for fvg until LVM reads it"
	if got.Remedy != wantRemedy {
		t.Errorf("remedy\n got %q\nwant %q", got.Remedy, wantRemedy)
	}
}

// DMDevice.Trouble on the faults captures: nothing on the healthy stack, the
// read-only pool once the PV is healthy again, the error table under it.
func TestDMTroubleOnFaultCaptures(t *testing.T) {
	for snap, want := range map[string]map[string]string{
		"fault-base":     {"flt": "", "fvg-vlv": "", "fvg-vpool-vpool": "", "fvg-vpool_vdata": ""},
		"fault-readonly": {"flt": "", "fvg-vlv": "", "fvg-vpool-vpool": "vdo read-only", "fvg-vpool_vdata": ""},
		"fault-eio":      {"flt": "error target", "fvg-vlv": "", "fvg-vpool-vpool": "vdo read-only", "fvg-vpool_vdata": ""},
	} {
		h := replayHost(t, snap)
		got := map[string]string{}
		for name, d := range h.DM {
			got[name] = d.Trouble()
		}
		if !maps.Equal(got, want) {
			t.Errorf("%s: Trouble by device %q, want %q", snap, got, want)
		}
	}
}
