package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/reconcile/plan/removal"
	"github.com/keel-storage/keel/schema/spec"
)

// absentGuards raises the findings that stop or qualify the removal of the
// absent LV vg/name (observed as lv, perhaps already del-<name>), and
// reports whether the removal must not be planned at all. The same rules
// are enforced again by removal.Plan against a fresh probe before
// reconcile/apply/wipe acts.
func (p *planner) absentGuards(vg, name string, lv *model.LV) bool {
	object := vg + "/" + name
	// Before the shared VG's rule: its remedy (pvesm free) would destroy a
	// disk a guest still names.
	if u := removal.GuestUses(p.h, vg, name); u.Any() {
		p.add(Finding{ID: LVAbsentReferenced, Object: object,
			Message:  fmt.Sprintf("LV %s is declared absent, but a guest's configuration names it: %s; keel never removes a disk a guest names", object, u.Where()),
			Expected: "named by no guest", Observed: "named at " + u.Places(),
			Remedy: u.Remedy(vg, name),
		})
		return true
	}
	if s, ok := removal.SharedVGs(p.h, p.d.SharedVGs()...)[vg]; ok {
		f := Finding{ID: LVAbsentShared, Object: object,
			Message:  fmt.Sprintf("LV %s is declared absent, but vg %s is shared between nodes (%s): it may be in use on another node, and keel removes it only on the node that owns it", object, vg, s.Why),
			Expected: "removed on the node that owns it", Observed: "present in shared vg " + vg,
			Remedy: s.WayForward(vg, name),
		}
		if s.Unknown {
			f.Message = fmt.Sprintf("LV %s is declared absent, but keel cannot tell whether vg %s is shared between nodes (%s): it may be in use on another node, so keel holds its removal", object, vg, s.Why)
			f.Expected, f.Observed = "removed once vg "+vg+" is known to be local", "present in vg "+vg+", which may be shared"
		}
		p.add(f)
		return true
	}
	if p.absentChain(vg, name) {
		return true
	}
	if lv.SegType == "thin" && lv.Pool != "" {
		tp := p.h.ThinPools[lv.Pool]
		switch {
		case tp == nil || tp.Zero:
		case !p.d.Removal.AllowUnzeroedThinReuse:
			// Held: the same rule removal.Plan enforces (alloc.go).
			p.add(Finding{ID: LVAbsentUnzeroedPool, Object: object,
				Message:  fmt.Sprintf("LV %s is declared absent, but its removal is held: %s", object, removal.UnzeroedHold(lv.Pool)),
				Expected: "removed from a pool that zeroes new chunks", Observed: "thin pool " + lv.Pool + " with zeroing off",
				Remedy: removal.UnzeroedRemedy(lv.Pool) + ", or set removal: allowUnzeroedThinReuse: true",
			})
			return true
		case !p.raised(ThinUnzeroedReuse, lv.Pool):
			p.add(Finding{ID: ThinUnzeroedReuse, Object: lv.Pool,
				Message:  removal.UnzeroedNote(lv.Pool),
				Expected: "zeroing on", Observed: "zeroing off",
				Remedy: removal.UnzeroedRemedy(lv.Pool),
			})
		}
	}
	return false
}

// raised reports whether a finding id on object was already raised.
func (p *planner) raised(id FindingID, object string) bool {
	return slices.ContainsFunc(p.findings, func(f Finding) bool { return f.ID == id && f.Object == object })
}

// absentChain raises lv.absent_chain and reports true when removing the
// absent vg/name would break a Proxmox VE volume chain: part of the chain
// is not declared absent, or the LV is a snapshot of a volume a guest
// names (removal.ChainOf; removal.Plan refuses the same).
func (p *planner) absentChain(vg, name string) bool {
	object := vg + "/" + name
	declared := func(lv string) bool {
		return slices.ContainsFunc(p.d.VolumeGroups[vg].Absent, func(a spec.AbsentLV) bool { return a.Name == lv })
	}
	if c := removal.ChainOf(p.h, vg, name, declared); c != nil {
		p.add(Finding{ID: LVAbsentChain, Object: object,
			Message:  fmt.Sprintf("LV %s is declared absent, but it %s", object, c.Why()),
			Expected: "the whole volume chain absent", Observed: "left in the chain: " + strings.Join(c.Left, ", "),
			Remedy: c.Remedy(),
		})
		return true
	}
	return false
}
