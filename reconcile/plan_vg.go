package reconcile

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/keel-storage/keel/schema"
	"github.com/keel-storage/keel/schema/units"
)

// defaultExtentBytes is LVM's default physical extent size, used to plan a
// VG that does not exist yet.
const defaultExtentBytes = 4 << 20

// planVG judges one declared VG, then its pools and absent LVs.
func (p *planner) planVG(name string, want schema.VolumeGroup) {
	vg := p.h.VGs[name]
	phase := 0
	for _, path := range want.PVs {
		if _, ok := p.isLVPath(path); ok {
			phase = phaseStacked
		}
	}
	if vg == nil {
		key := p.add(Finding{ID: "vg.missing", Object: name,
			Message:  fmt.Sprintf("VG %s does not exist", name),
			Expected: "VG on " + strings.Join(want.PVs, ", "), Observed: "no such VG",
			Remedy: createRemedy(want.Create, "pvcreate and vgcreate on the declared PVs"),
		})
		if want.Create {
			var cmds [][]string
			for _, pv := range want.PVs {
				cmds = append(cmds, []string{"pvcreate", pv})
			}
			cmds = append(cmds, append([]string{"vgcreate", name}, want.PVs...))
			p.act(phaseCreateVG+phase, Action{ID: "vg.create:" + name, Kind: KindCommand, Class: Live, Object: name,
				Summary:  fmt.Sprintf("create VG %s on %s (the executor checks the PVs are blank)", name, strings.Join(want.PVs, " ")),
				Commands: cmds, Remedies: []string{key}})
		}
	} else {
		p.checkVGHealth(name, want)
	}
	for _, pool := range slices.Sorted(maps.Keys(want.VDOPools)) {
		p.planVDO(name, pool, want, want.VDOPools[pool], phase)
	}
	for _, pool := range slices.Sorted(maps.Keys(want.ThinPools)) {
		p.planThin(name, pool, want.ThinPools[pool], phase)
	}
	if vg != nil {
		p.planAbsent(name, want.Absent)
	}
}

func createRemedy(create bool, what string) string {
	if create {
		return "keel creates it (create: true): " + what
	}
	return "set create: true to let keel create it, or create it by hand: " + what
}

// checkVGHealth reports a partial VG and declared pools that are inactive.
func (p *planner) checkVGHealth(name string, want schema.VolumeGroup) {
	vg := p.h.VGs[name]
	if len(vg.Attr) > 3 && vg.Attr[3] == 'p' {
		var missing []string
		for _, pvName := range vg.PVs {
			if pv := p.h.PVs[pvName]; pv != nil && len(pv.Attr) > 2 && pv.Attr[2] == 'm' {
				missing = append(missing, pvName)
			}
		}
		obs := "vg_attr " + vg.Attr
		if len(missing) > 0 {
			obs += "; missing " + strings.Join(missing, ", ")
		}
		p.add(Finding{ID: "vg.incomplete", Object: name,
			Message:  fmt.Sprintf("VG %s is partial: PVs are missing", name),
			Expected: "all PVs present", Observed: obs,
			Remedy: "bring the missing device back; do not vgreduce --removemissing without a plan",
		})
	}
	var inactive []string
	for _, pool := range slices.Sorted(maps.Keys(want.VDOPools)) {
		if lv := p.h.LVs[name+"/"+want.VDOPools[pool].LV]; lv != nil && !lv.Active {
			inactive = append(inactive, lv.FullName)
		}
	}
	for _, pool := range slices.Sorted(maps.Keys(want.ThinPools)) {
		if lv := p.h.LVs[name+"/"+pool]; lv != nil && !lv.Active {
			inactive = append(inactive, lv.FullName)
		}
	}
	if len(inactive) > 0 && !p.activationReported(name) {
		p.add(Finding{ID: "vg.inactive", Object: name,
			Message:  fmt.Sprintf("VG %s has inactive pools: %s", name, strings.Join(inactive, ", ")),
			Expected: "active", Observed: "inactive",
			Remedy: "vgchange -ay " + name,
		})
	}
}

// activationReported tells whether activation.pvscan_on_lvs will describe
// the VG's inactivity (it runs later, in planStacking).
func (p *planner) activationReported(vg string) bool {
	lowers := p.stackedVGs()[vg]
	if len(lowers) == 0 {
		return false
	}
	for _, key := range p.h.VGs[vg].LVs {
		if lv := p.h.LVs[key]; lv != nil && lv.Active {
			return false
		}
	}
	for _, key := range lowers {
		if lv := p.h.LVs[key]; lv != nil && lv.Active {
			return true
		}
	}
	return false
}

// planAbsent emits a destructive wipe for each LV the desired state lists
// as absent that still exists (or was already renamed to del-<name>).
func (p *planner) planAbsent(vg string, absent []string) {
	mode := p.d.Removal.Mode
	if mode == "" {
		mode = "zeroout"
	}
	step, err := units.ParseSize(p.d.Removal.Step)
	if err != nil || step == 0 {
		step = 32 << 20
	}
	for _, name := range absent {
		object := vg + "/" + name
		lv := p.h.LVs[object]
		if lv == nil {
			lv = p.h.LVs[vg+"/del-"+name]
		}
		if lv == nil || p.absentHeld(vg, name, lv) {
			continue
		}
		if p.absentGuards(vg, name, lv) {
			continue
		}
		how := mode
		if lv.SegType == "thin" {
			how = "discard" // reconcile/wipe never zero-fills a thin LV
		}
		key := p.add(Finding{ID: "lv.absent", Object: object,
			Message:  fmt.Sprintf("LV %s is declared absent but exists (%s)", object, lv.FullName),
			Expected: "absent", Observed: "present, " + units.FormatSize(lv.Size),
			Remedy: fmt.Sprintf("rename to del-%s, %s in steps of %s, lvremove", name, how, units.FormatSize(step)),
		})
		p.act(phaseChange, Action{ID: "lv.absent:" + object, Kind: KindWipe, Class: Destructive, Object: object,
			Summary:  fmt.Sprintf("wipe (%s) and remove %s, as the desired state asks", mode, object),
			Wipe:     &WipeSpec{VG: vg, LV: name, Mode: mode, StepMax: step, UUID: lv.UUID},
			Remedies: []string{key}})
	}
}
