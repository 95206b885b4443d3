package converge

import (
	"time"

	"github.com/keel-storage/keel/lvm"
	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/reconcile/plan"
	"github.com/keel-storage/keel/reconcile/plan/removal"
	"github.com/keel-storage/keel/reconcile/state"
	"github.com/keel-storage/keel/reconcile/state/statefile"
	"github.com/keel-storage/keel/schema/spec"
)

// absentNames are the absent entries ("vg/lv") of the desired state in force.
func (l *Loop) absentNames() []string { return removal.AbsentNames(l.declared()) }

// records reads keel's state and records the first sight of every absent
// name it has no record of (written only when there is one). A state read
// but not written comes back with an error wrapping
// statefile.ErrUnrecorded; one that cannot be read with a nil state.
// Each name recorded now is logged: the first sight is the moment an LV
// under the name must predate, and a first sight taken by a converge pass
// is one no earlier reading recorded.
func (l *Loop) records() (*state.State, error) {
	now := time.Now()
	names := l.absentNames()
	st, err := l.state.LoadSeeing(names, now)
	if err == nil && st != nil {
		for _, n := range names {
			if st.Absent[n].FirstSeen.Equal(now.UTC()) {
				l.log.Info("first sight of an absent name recorded", "lv", n, "first_seen", state.Stamp(now))
			}
		}
	}
	return st, err
}

// loadMemory reads keel's state before a plan and records the first sight
// of every absent name it has no record of yet, in every mode: a dry run
// and the daemon in audit mode too, since the record is keel's own memory
// and not the host's storage. Without it, a week of audit recorded
// nothing, and the first converge pass took "now" as the first sight of a
// name whose entry was written a week before: a new LV made under a reused
// VM id in that week was removed. With no absent name the file is not
// touched. A state that cannot be read holds every removal (Memory.Held);
// one that cannot be written is said (Memory.Unrecorded, a
// state.unrecorded finding) and its unrecorded names remove nothing
// (state.Judge).
func (l *Loop) loadMemory() plan.Memory {
	mem := l.loadAbsentMemory()
	mem.Now = time.Now()
	l.loadHolds(&mem)
	return mem
}

// loadAbsentMemory is loadMemory's records of absent names.
func (l *Loop) loadAbsentMemory() plan.Memory {
	today := spec.WaiverDay(time.Now())
	if len(l.absentNames()) == 0 {
		return plan.Memory{Today: today}
	}
	st, err := l.records()
	if st == nil {
		l.log.Error("keel's state cannot be read: removals are held", "err", err)
		return plan.Memory{Held: err.Error(), Today: today}
	}
	mem := plan.Memory{Absent: st.Absent, Today: today, StatePath: l.statePath()}
	if err != nil {
		l.log.Warn("first sight of absent names not recorded: nothing is removed under them until it is", "err", err)
		mem.Unrecorded = err.Error()
	}
	return mem
}

// statePath is keel's state file as messages name it.
func (l *Loop) statePath() string {
	if l.state.Path == "" {
		return statefile.DefaultPath
	}
	return l.state.Path
}

// wipeMemory puts keel's state into a removal request: the records it
// judges absent names by. When the removal goes by the daemon's rule
// (req.RequireAbsent), it first records the first sight of every absent
// name it has no record of, as a pass does, acting or not. A state that
// cannot be read goes into req.Held: every absent-driven removal and
// resume is then refused, and a removal by name fails before its first
// change because it cannot be recorded (wipe.RemoveRecorded). A name whose
// first sight could not be written stays without a record and is refused
// (state.Judge).
func (l *Loop) wipeMemory(req *removal.Request) {
	var st *state.State
	var err error
	if req.RequireAbsent {
		st, err = l.records()
	} else {
		st, err = l.state.Load()
	}
	if st == nil {
		req.Held = err.Error()
		return
	}
	if err != nil {
		l.log.Warn("first sight of absent names not recorded: nothing is removed under them until it is", "err", err)
	}
	req.Known = st.Absent
}

// actionRecords keeps the executor's records (stuck actions, destructive
// actions begun, finished or failed) in keel's state file, beside the
// identities of absent names, under the same lock.
type actionRecords struct{ store statefile.Store }

func (r actionRecords) Load() (map[string]state.Action, error) {
	st, err := r.store.Load()
	if err != nil {
		return nil, err
	}
	return st.Actions, nil
}

func (r actionRecords) Put(id string, a state.Action) error {
	_, err := r.store.Update(func(st *state.State) error {
		if a.Empty() {
			delete(st.Actions, id)
		} else {
			st.Actions[id] = a
		}
		return nil
	})
	return err
}

// settleRemovals records as removed every LV keel bound to an absent name
// and began to remove whose uuid the host no longer has: its lvremove
// succeeded, but keel was killed before it could write so (e2e/kill saw it
// when a kill landed while lvremove ran). Left open, the binding would let
// keel remove that LV a second time should it come back (a vgcfgrestore of
// an older backup): state.Judge removes an LV bound and unfinished. Only
// when the LV's VG reads whole (present, attributes known, not partial:
// probes.VG.Partial) is the uuid's absence proof; a dry run writes nothing.
func (l *Loop) settleRemovals(h *model.Host, dryRun bool) {
	if dryRun || h == nil || len(l.mem.Absent) == 0 {
		return
	}
	have := make(map[string]bool, len(h.LVs))
	for _, lv := range h.LVs {
		have[lv.UUID] = true
	}
	type gone struct{ name, uuid string }
	var done []gone
	for name, rec := range l.mem.Absent {
		vg := h.VGs[lvm.Split(name).VG]
		if vg == nil || vg.Attr == "" || vg.Partial() {
			continue
		}
		for _, b := range rec.Bound {
			if b.Removed.IsZero() && b.UUID != "" && !have[b.UUID] {
				done = append(done, gone{name, b.UUID})
			}
		}
	}
	if len(done) == 0 {
		return
	}
	now := time.Now()
	st, err := l.state.Update(func(st *state.State) error {
		for _, g := range done {
			st.Removed(g.name, g.uuid, now)
		}
		return nil
	})
	if err != nil {
		l.log.Error("removals finished by lvremove could not be recorded", "err", err)
		return
	}
	for _, g := range done {
		l.log.Info("removal finished before keel could record it: recorded now", "lv", g.name, "uuid", g.uuid)
	}
	l.mem.Absent = st.Absent
}
