package plan

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/reconcile/state"
	"github.com/keel-storage/keel/schema/spec"
)

// Memory is what keel remembers of the host across processes (package
// reconcile/state), handed to planning by the caller: the planner never
// reads the state file itself, so planning stays a pure function of its
// inputs.
type Memory struct {
	// Absent holds keel's records by "vg/lv" (state.State.Absent). The
	// caller records the first sight of every absent name before it plans
	// (statefile.Store.LoadSeeing), in every mode: a name without a record
	// is one whose first sight could not be written, and nothing is removed
	// for it (state.Judge).
	Absent map[string]state.Absent
	// VGs holds keel's record of each declared VG's vg_uuid by name
	// (state.State.VGs), recorded at first sight (VGSightings); another
	// UUID under the name holds the VG (vg.uuid_changed).
	VGs map[string]state.VG
	// Pvmoves are the pvmoves keel started (state.State.Pvmoves): the only
	// ones it resumes when they are interrupted (planPvmove).
	Pvmoves []state.Pvmove
	// Unrecorded, when set, says why the first sights could not be written
	// (a read-only /var/lib/keel, a user who cannot write it): the plan says
	// so in a state.unrecorded finding and still judges everything else.
	Unrecorded string
	// StatePath is keel's state file, the object of state.unrecorded.
	StatePath string
	// FirstPass judges a name without a record as seen for the first time
	// by this plan, after every LV on the host was made: for a caller with
	// no state of the host to read or write (Plan; a replayed snapshot).
	FirstPass bool
	// Held, when set, says why keel's records could not be read (a corrupt
	// or newer state file). No removal is planned while it is set: without
	// them keel cannot tell a reused name from the LV it was asked to remove.
	Held string
	// Today is the date (UTC, YYYY-MM-DD) waivers are judged on; "" keeps
	// every waiver in force (a caller that has no clock of its own).
	Today string
	// Now is the moment the caller planned at: the waits of suspended
	// devices and the expiry of holds are judged against it. Zero (a
	// caller with no clock) resumes no suspended device and keeps every
	// hold in force.
	Now time.Time
	// Suspended holds keel's records of the devices found stuck suspended
	// by device-mapper name (state.State.Suspended): since when no LVM or
	// dmsetup command was seen on their VG (SuspendedQuiet).
	Suspended map[string]state.Suspended
	// Holds are the operators' holds by object (state.State.Holds, keel
	// hold): nothing is done to a held object (hold.go).
	Holds map[string]state.Hold
}

// PlanWith is Plan with keel's records of the host: each LV under an absent
// name is judged against them (state.Judge) before a removal is planned, and
// one that is not the LV the absent entry meant raises lv.absent_reappeared
// instead.
func PlanWith(desired *spec.Config, host *model.Host, mem Memory) Result {
	return plan(desired, host, mem)
}

// absentHeld judges lv, found under the absent name vg/name (as itself or
// renamed to del-<name>), against keel's records and the uuid the entry
// pins ("" for none). It reports true, after adding the finding that says
// why, when no removal may be planned for it.
func (p *planner) absentHeld(vg, name string, lv *model.LV, pin string) bool {
	object := vg + "/" + name
	if p.mem.Held != "" {
		p.add(Finding{ID: LVAbsent, Object: object,
			Message:  fmt.Sprintf("LV %s is declared absent but exists (%s, uuid %s); its removal is held", object, lv.FullName, lv.UUID),
			Expected: "absent", Observed: "present; keel's state cannot be read: " + p.mem.Held,
			Remedy: "fix or move away keel's state file (the message names it); keel removes nothing for absent until it reads",
		})
		return true
	}
	rec, known := p.mem.Absent[object]
	if !known && p.mem.FirstPass {
		rec, known = state.Absent{FirstSeen: firstPass}, true
	}
	created, _ := state.ParseLVTime(lv.Fields.Get("lv_time"))
	why := state.Judge(rec, known, state.LV{UUID: lv.UUID, Created: created}, pin)
	if why == "" {
		return false
	}
	remedy := fmt.Sprintf("if it is to stay, drop %q from volumeGroups.%s.absent; to remove this LV, pin it there as {name: %q, uuid: %q}, or run: keel wipe %s",
		name, vg, name, lv.UUID, object)
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

// planUnrecorded says, in one finding, that the first sight of absent
// names could not be recorded: nothing is removed under them until it is,
// and until then a later converge pass must not take its own moment as
// their first sight (an entry written during an audit week would then
// remove a disk made that week). It never holds anything else.
func (p *planner) planUnrecorded() {
	if p.mem.Unrecorded == "" || p.mem.Held != "" {
		return
	}
	var names []string
	for _, vg := range slices.Sorted(maps.Keys(p.d.VolumeGroups)) {
		for _, a := range p.d.VolumeGroups[vg].Absent {
			if _, ok := p.mem.Absent[vg+"/"+a.Name]; !ok {
				names = append(names, vg+"/"+a.Name)
			}
		}
	}
	if len(names) == 0 {
		return
	}
	p.add(Finding{ID: StateUnrecorded, Object: p.mem.StatePath,
		Message:  fmt.Sprintf("keel could not record when it first saw %s in absent; nothing is removed under them until it can: %s", strings.Join(names, ", "), p.mem.Unrecorded),
		Expected: "the first sight of every absent name recorded", Observed: "not recorded",
		Remedy: fmt.Sprintf("let root write %s (keel.service does, or run as root: keel plan), before any LV under these names is made", p.mem.StatePath),
	})
}

// firstPass stands for "now" as the first sight of Memory.FirstPass: the
// planner reads no clock, and every LV it judges was made before it.
var firstPass = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)

func lvTime(lv *model.LV) string {
	if t := lv.Fields.Get("lv_time"); t != "" {
		return t
	}
	return "at an unknown time"
}
