package plan

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/keel-storage/keel/lvm"
	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/reconcile/plan/removal"
	"github.com/keel-storage/keel/schema/spec"
)

// vgHeld judges the VG LVM reports under the declared name against its
// declared PVs and keel's record of its vg_uuid (removal.VGIdentity). It
// reports true, after adding vg.foreign or vg.uuid_changed, when the VG is
// not the declared one: nothing is then planned in it (no create, no pool,
// no removal, no other change: act drops any action on it), only findings.
// A VG that shares PVs with its declaration and also sits on PVs not
// declared raises vg.pvs_drift and is planned as usual.
func (p *planner) vgHeld(name string, want spec.VolumeGroup) bool {
	vg := p.h.VGs[name]
	rec, known := p.mem.VGs[name]
	hold := removal.VGIdentity(p.h, name, want.PVs, rec, known)
	if hold == nil {
		// Declared PVs not in the VG are planVGPVs' (vg.pv_not_in_vg, a
		// vgextend): drift is the PVs the declaration does not name.
		if m := removal.MatchPVs(p.h, name, want.PVs); len(m.Extra) > 0 {
			p.add(Finding{ID: VGPVsDrift, Object: name,
				Message:  fmt.Sprintf("VG %s is on its declared PVs %s but also on PVs not declared: %s; keel never removes a PV from a VG on its own", name, strings.Join(m.Matched, ", "), strings.Join(m.Extra, ", ")),
				Expected: "PVs " + strings.Join(want.PVs, ", "), Observed: "PVs " + strings.Join(vg.PVs, ", "),
				Remedy: fmt.Sprintf("declare the VG's PVs as they are in volumeGroups.%s.pvs, or move the extents off the undeclared PVs by hand (pvmove, vgreduce)", name),
			})
		}
		return false
	}
	f := Finding{ID: VGForeign, Object: name, Message: hold.Why + "; keel changes nothing in it",
		Expected: "PVs " + strings.Join(want.PVs, ", "), Observed: "PVs " + strings.Join(vg.PVs, ", "),
		Remedy: hold.Remedy}
	if hold.Kind == removal.HoldUUID {
		f.ID = VGUUIDChanged
		f.Expected, f.Observed = "vg_uuid "+rec.UUID, "vg_uuid "+vg.UUID
	}
	p.add(f)
	if p.heldVGs == nil {
		p.heldVGs = map[string]bool{}
	}
	p.heldVGs[name] = true
	return true
}

// inHeldVG reports whether an action's object ("vg" or "vg/lv") lies in a
// VG vgHeld holds.
func (p *planner) inHeldVG(object string) bool {
	if len(p.heldVGs) == 0 {
		return false
	}
	if p.heldVGs[object] {
		return true
	}
	vg, _, ok := strings.Cut(object, "/")
	return ok && p.heldVGs[vg]
}

// VGSightings returns what keel records of the declared VGs on host
// (state.State.SeeVGs): in seen, the vg_uuid of each declared VG LVM reports
// that is not foreign (its first sight, kept when keel has none), and in
// gone the declared VGs with create: true that are not there at all,
// neither read by LVM nor running in the kernel: keel makes them again on
// blank PVs (vg.create), and the VG it makes is recorded afresh. A VG keel
// may not create keeps its record while it is gone, so one made again by
// hand under the name is vg.uuid_changed even when a pass ran in between
// (the daemon plans on every uevent). A host whose probe reported errors
// gives no gone: a VG LVM could not list is not proof it is gone. It is
// pure; the caller writes the records before it plans, in every mode.
func VGSightings(desired *spec.Config, host *model.Host) (seen map[string]string, gone []string) {
	if desired == nil || host == nil {
		return nil, nil
	}
	seen = map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(desired.VolumeGroups)) {
		vg := host.VGs[name]
		if vg == nil {
			if desired.VolumeGroups[name].Create && len(host.Errors) == 0 && !runsInKernel(host, name) {
				gone = append(gone, name)
			}
			continue
		}
		if vg.UUID == "" || removal.MatchPVs(host, name, desired.VolumeGroups[name].PVs).Foreign() {
			continue
		}
		seen[name] = vg.UUID
	}
	return seen, gone
}

// runsInKernel reports whether a device-mapper device of VG name is there
// (its LVs run while LVM reads no VG: vg.unreadable).
func runsInKernel(h *model.Host, name string) bool {
	prefix := lvm.DMPrefix(name)
	for dm := range h.DM {
		if rest, ok := strings.CutPrefix(dm, prefix); ok && rest != "" && rest[0] != '-' {
			return true
		}
	}
	return false
}
