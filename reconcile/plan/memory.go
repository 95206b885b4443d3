package plan

import (
	"fmt"

	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/reconcile/state"
	"github.com/keel-storage/keel/schema/spec"
)

// Memory is what keel remembers of the host across processes (package
// reconcile/state), handed to planning by the caller: the planner never
// reads the state file itself, so planning stays a pure function of its
// inputs.
type Memory struct {
	// Absent holds keel's records by "vg/lv" (state.State.Absent). A name
	// without a record is one keel sees in absent for the first time now:
	// the caller records it before it plans (state.State.See).
	Absent map[string]state.Absent
	// VGs holds keel's record of each declared VG's vg_uuid by name
	// (state.State.VGs), recorded at first sight (VGSightings); another
	// UUID under the name holds the VG (vg.uuid_changed).
	VGs map[string]state.VG
	// Held, when set, says why keel's records could not be read (a corrupt
	// or newer state file). No removal is planned while it is set: without
	// them keel cannot tell a reused name from the LV it was asked to remove.
	Held string
	// Today is the date (UTC, YYYY-MM-DD) waivers are judged on; "" keeps
	// every waiver in force (a caller that has no clock of its own).
	Today string
}

// PlanWith is Plan with keel's records of the host: each LV under an absent
// name is judged against them (state.Judge) before a removal is planned, and
// one that is not the LV the absent entry meant raises lv.absent_reappeared
// instead.
func PlanWith(desired *spec.Config, host *model.Host, mem Memory) Result {
	return plan(desired, host, mem)
}

// absentHeld judges lv, found under the absent name vg/name (as itself or
// renamed to del-<name>), against keel's records. It reports true, after
// adding the finding that says why, when no removal may be planned for it.
func (p *planner) absentHeld(vg, name string, lv *model.LV) bool {
	object := vg + "/" + name
	if p.mem.Held != "" {
		p.add(Finding{ID: LVAbsent, Object: object,
			Message:  fmt.Sprintf("LV %s is declared absent but exists (%s); its removal is held", object, lv.FullName),
			Expected: "absent", Observed: "present; keel's state cannot be read: " + p.mem.Held,
			Remedy: "fix or move away keel's state file (the message names it); keel removes nothing for absent until it reads",
		})
		return true
	}
	rec, known := p.mem.Absent[object]
	created, _ := state.ParseLVTime(lv.Fields.Get("lv_time"))
	why := state.Judge(rec, known, state.LV{UUID: lv.UUID, Created: created})
	if why == "" {
		return false
	}
	remedy := fmt.Sprintf("if it is to stay, drop %q from volumeGroups.%s.absent; to remove this LV, run: keel wipe %s", name, vg, object)
	if lv.Name != name {
		remedy = fmt.Sprintf("if it is to stay, drop %q from volumeGroups.%s.absent; keel did not rename %s, so to remove it run: lvrename %s %s %s && keel wipe %s",
			name, vg, lv.FullName, vg, lv.Name, name, object)
	}
	p.add(Finding{ID: LVAbsentReappeared, Object: object,
		Message:  fmt.Sprintf("%s is under an absent name but is not the LV keel was asked to remove; keel leaves it alone: %s", lv.FullName, why),
		Expected: "the LV the absent entry was written for", Observed: fmt.Sprintf("uuid %s, created %s", lv.UUID, lvTime(lv)),
		Remedy: remedy,
	})
	return true
}

func lvTime(lv *model.LV) string {
	if t := lv.Fields.Get("lv_time"); t != "" {
		return t
	}
	return "at an unknown time"
}
