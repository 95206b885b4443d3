package removal

import (
	"fmt"
	"slices"
	"strings"

	"github.com/keel-storage/keel/lvm"
	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/reconcile/state"
)

// PVMatch compares the PVs of an observed VG with the PVs its declaration
// names, device by device (MatchPVs).
type PVMatch struct {
	// Matched are the VG's PVs (pv_name) that are declared devices.
	Matched []string
	// Extra are the VG's PVs that no declared path names; a PV LVM reports
	// missing ("[unknown]", pv_attr 'm') is in neither list.
	Extra []string
	// Missing are the declared paths that name none of the VG's PVs.
	Missing []string
}

// Foreign reports whether the VG is not the declared one: LVM reports PVs
// for it and none of them is a declared device. A VG that shares at least
// one PV with its declaration is the declared VG, changed by hand (an
// operator's vgextend, a pvmove and vgreduce half done, a PV lost): that is
// drift (Drift), reported, not a reason to hold it. A VG none of whose PVs
// is declared is a disk moved from a dead node, a guest's VG made visible
// or a VG made again elsewhere under the name: keel holds it.
func (m PVMatch) Foreign() bool { return len(m.Matched) == 0 && len(m.Extra) > 0 }

// Drift reports whether the VG shares PVs with its declaration but the two
// sets differ.
func (m PVMatch) Drift() bool {
	return len(m.Matched) > 0 && (len(m.Extra) > 0 || len(m.Missing) > 0)
}

// MatchPVs compares the PVs LVM reports for VG name with the declared paths
// pvs. A declared path and a PV are the same device when they resolve to the
// same kernel device: /dev/disk/by-id/… and /dev/disk/by-path/… links,
// /dev/<kernel name>, /dev/mapper/<dm name> and an LV's /dev/<vg>/<lv> all
// name one (model.Host.Device), and a PV is known by its pv_name and the
// device it resolved to (model.PV.Device). A declared path that names no
// device keel sees (a disk gone, a link that is not there) matches nothing.
func MatchPVs(h *model.Host, name string, pvs []string) PVMatch {
	var m PVMatch
	vg := h.VGs[name]
	if vg == nil {
		return m
	}
	declared := make([]string, len(pvs)) // kernel device of each declared path
	for i, p := range pvs {
		declared[i] = deviceOf(h, p)
	}
	used := make([]bool, len(pvs))
	lost := false
	for _, pvName := range vg.PVs {
		pv := h.PVs[pvName]
		if pv == nil || missingPV(pv) {
			lost = true
			continue
		}
		dev := pv.Device
		if d := h.Device(pv.Name); d != "" {
			dev = d
		}
		hit := false
		for i, p := range pvs {
			if p == pv.Name || (dev != "" && declared[i] == dev) {
				used[i], hit = true, true
			}
		}
		if hit {
			m.Matched = append(m.Matched, pv.Name)
		} else {
			m.Extra = append(m.Extra, pv.Name)
		}
	}
	for i, p := range pvs {
		// A declared disk that is gone while LVM reports a PV of the VG
		// missing is that PV, as far as keel can tell: vg.incomplete says so.
		if !used[i] && (declared[i] != "" || !lost) {
			m.Missing = append(m.Missing, p)
		}
	}
	slices.Sort(m.Matched)
	slices.Sort(m.Extra)
	return m
}

// missingPV reports whether LVM reports pv missing: its device is gone
// (pv_name "[unknown]") or pv_attr's third character is 'm' (pvs(8)).
func missingPV(pv *model.PV) bool {
	return pv.Name == "[unknown]" || (len(pv.Attr) > 2 && pv.Attr[2] == 'm')
}

// deviceOf is the kernel device a declared PV path names, "" when keel sees
// none: a disk path (model.Host.Device), or an LV path /dev/<vg>/<lv>,
// resolved through the LV's device-mapper name.
func deviceOf(h *model.Host, path string) string {
	if d := h.Device(path); d != "" {
		return d
	}
	rest, ok := strings.CutPrefix(path, "/dev/")
	if !ok || strings.Count(rest, "/") != 1 || strings.HasPrefix(rest, "disk/") {
		return ""
	}
	lv := h.LVs[rest]
	if lv == nil {
		return ""
	}
	dm := lv.DMName
	if dm == "" {
		dm = lvm.Split(lv.FullName).DMName()
	}
	return h.Device("/dev/mapper/" + dm)
}

// HoldKind says which rule holds a declared VG.
type HoldKind int

const (
	// HoldForeign: none of the VG's PVs is declared (finding vg.foreign).
	HoldForeign HoldKind = iota + 1
	// HoldUUID: another vg_uuid than keel recorded (vg.uuid_changed).
	HoldUUID
)

// VGHold is why keel holds every change in a declared VG: the rule, one
// line saying why, and the way forward, as typed.
type VGHold struct {
	Kind   HoldKind
	Why    string
	Remedy string
}

// VGIdentity judges the VG LVM reports under the declared name against its
// declaration (pvs) and keel's record of its vg_uuid (rec; known false when
// keel has none). It returns nil when keel may act in the VG. The PVs are
// judged first: a foreign VG is held whatever keel recorded.
func VGIdentity(h *model.Host, name string, pvs []string, rec state.VG, known bool) *VGHold {
	vg := h.VGs[name]
	if vg == nil {
		return nil
	}
	// vgrename takes the VG's UUID in place of its old name (vgrename(8)),
	// which renames this VG and no other of the same name.
	rename := fmt.Sprintf("vgrename %s %s", vg.UUID, name+"-other")
	if m := MatchPVs(h, name, pvs); m.Foreign() {
		return &VGHold{Kind: HoldForeign,
			Why: fmt.Sprintf("vg %s (uuid %s) is not the declared VG: none of its PVs (%s) is a declared PV (%s)",
				name, vg.UUID, strings.Join(m.Extra, ", "), strings.Join(pvs, ", ")),
			Remedy: fmt.Sprintf("if it is another host's VG, rename it out of the way: %s; if it is this one, declare its PVs in volumeGroups.%s.pvs",
				rename, name),
		}
	}
	if why := state.JudgeVG(rec, known, vg.UUID); why != "" {
		return &VGHold{Kind: HoldUUID,
			Why: fmt.Sprintf("vg %s: %s", name, why),
			Remedy: fmt.Sprintf("if this is the VG meant, acknowledge it: keel ack-vg %s %s; otherwise rename it out of the way: %s",
				name, vg.UUID, rename),
		}
	}
	return nil
}

// vgHeld refuses an LV of a declared VG keel holds (VGIdentity), with the
// hold's own line.
func (r Request) vgHeld(h *model.Host, name, vg string) error {
	pvs, ok := r.PVs[vg]
	if !ok {
		return nil
	}
	rec, known := r.VGs[vg]
	switch hold := VGIdentity(h, vg, pvs, rec, known); {
	case hold == nil:
		return nil
	case hold.Kind == HoldForeign:
		return fmt.Errorf("lv %s: %w: %s (vg.foreign); %s", name, ErrRefused, hold.Why, hold.Remedy)
	default:
		return fmt.Errorf("lv %s: %w: %s (vg.uuid_changed); %s", name, ErrRefused, hold.Why, hold.Remedy)
	}
}
