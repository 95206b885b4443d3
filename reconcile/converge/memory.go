package converge

import (
	"time"

	"github.com/keel-storage/keel/reconcile"
	"github.com/keel-storage/keel/reconcile/state"
	"github.com/keel-storage/keel/reconcile/wipe"
	"github.com/keel-storage/keel/schema"
)

// absentNames are the absent entries ("vg/lv") of the desired state in force.
func (l *Loop) absentNames() []string { return wipe.AbsentNames(l.declared()) }

// records reads keel's state; with seeing set it first records the first
// sight of every absent name it has no record of (written only when there
// is one).
func (l *Loop) records(seeing bool) (*state.State, error) {
	if seeing {
		return l.State.LoadSeeing(l.absentNames(), time.Now())
	}
	return l.State.Load()
}

// loadMemory reads keel's state before a plan and, unless dryRun, records
// the first sight of every absent name it has no record of yet (written
// only when there is one). With no absent name the file is not touched. A
// state that cannot be read holds every removal (Memory.Held).
func (l *Loop) loadMemory(dryRun bool) reconcile.Memory {
	today := schema.WaiverDay(time.Now())
	if len(l.absentNames()) == 0 {
		return reconcile.Memory{Today: today}
	}
	st, err := l.records(!dryRun)
	if err != nil {
		l.Log.Error("keel's state cannot be read: removals are held", "err", err)
		return reconcile.Memory{Held: err.Error(), Today: today}
	}
	return reconcile.Memory{Absent: st.Absent, Today: today}
}

// wipeMemory puts keel's state into a removal request: the records it
// judges absent names by. When the removal will act under the daemon's
// rule (req.RequireAbsent), it first records the first sight of every
// absent name it has no record of, as a pass does. A state that cannot be
// read goes into req.Held: every absent-driven removal and resume is then
// refused, and a removal by name fails before its first change because it
// cannot be recorded (wipe.RemoveRecorded).
func (l *Loop) wipeMemory(req *wipe.Request, act bool) {
	st, err := l.records(act && req.RequireAbsent)
	if err != nil {
		req.Held = err.Error()
		return
	}
	req.Known = st.Absent
}

// actionRecords keeps the executor's records (stuck actions, destructive
// actions begun, finished or failed) in keel's state file, beside the
// identities of absent names, under the same lock.
type actionRecords struct{ store state.Store }

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
