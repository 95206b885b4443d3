package executor

import (
	"context"
	"fmt"

	"github.com/keel-storage/keel/reconcile/plan"
	"github.com/keel-storage/keel/reconcile/state"
)

// Records keeps the executor's records across processes, restarts and
// reboots (keel's state file, reconcile/state). Load is called before the
// first pass that needs the records, and again after a failure; Put writes
// the record of one action ID, and an Empty record removes it.
type Records interface {
	Load() (map[string]state.Action, error)
	Put(id string, a state.Action) error
}

// loadRecords reads the persisted records once per process. Stuck records
// become stuck state (earlier: set, so keel apply run by a person may try
// them again); destructive records are kept for heldDestructive. A failure
// is kept in recordsErr and the load is tried again on the next pass.
func (e *Executor) loadRecords() {
	if e.Records == nil || e.loaded {
		return
	}
	recs, err := e.Records.Load()
	if err != nil {
		e.recordsErr = err
		e.Log.Error("executor records cannot be read: destructive actions are held", "err", err)
		return
	}
	e.recordsErr, e.loaded = nil, true
	for id, r := range recs {
		e.recs[id] = r
		if r.Stuck != nil {
			if _, ok := e.stuck[id]; !ok {
				e.stuck[id] = stuckState{fingerprint: r.Stuck.Fingerprint, reason: r.Stuck.Reason, earlier: true}
			}
		}
	}
}

// put changes the record of id and writes it. Without Records (tests, a
// process that keeps nothing) only the in-memory copy changes.
func (e *Executor) put(id string, change func(*state.Action)) error {
	r := e.recs[id]
	change(&r)
	if r.Empty() {
		delete(e.recs, id)
	} else {
		e.recs[id] = r
	}
	if e.Records == nil {
		return nil
	}
	if err := e.Records.Put(id, r); err != nil {
		return fmt.Errorf("record of action %s: %w", id, err)
	}
	return nil
}

// putLogged is put for records whose loss costs a retry, not safety: a
// failure is logged.
func (e *Executor) putLogged(id string, change func(*state.Action)) {
	if err := e.put(id, change); err != nil {
		e.Log.Warn("executor record not written", "action", id, "err", err)
	}
}

// target is the LV a destructive action works on (its lv_uuid), or "".
func target(a plan.Action) string {
	if a.Wipe == nil {
		return ""
	}
	return a.Wipe.UUID
}

// heldDestructive says why destructive action a must not run now, or ""
// when it may, and the status to report: Stuck (with its finding) for a
// removal that failed, Skipped otherwise. It holds an action that already ran in this process, and one
// that an earlier process finished, saw fail, or ran against another LV. An
// earlier run that simply stopped (the process was killed, the host lost
// power) is continued: reconcile/apply/wipe resumes from its checkpoint and works
// only on the LV bound to the name (docs/removal.md), so continuing is not
// running it twice.
func (e *Executor) heldDestructive(a plan.Action) (Status, string) {
	if e.destructive[a.ID] {
		return Skipped, "destructive action already ran once in this process"
	}
	r, ok := e.recs[a.ID]
	if !ok || r.Ran.IsZero() {
		return "", ""
	}
	switch {
	case !r.Finished.IsZero():
		return Skipped, fmt.Sprintf("destructive action already finished at %s; keel never runs it twice", state.Stamp(r.Finished))
	case r.Failed != "":
		return Stuck, fmt.Sprintf("failed at %s: %s", state.Stamp(r.Ran), r.Failed)
	case r.Target != "" && r.Target != target(a):
		return Skipped, fmt.Sprintf("destructive action ran at %s against the LV with uuid %s; %s is now another LV (uuid %s)",
			state.Stamp(r.Ran), r.Target, a.Object, target(a))
	}
	e.Log.Info("continuing a destructive action an earlier process began", "action", a.ID, "began", state.Stamp(r.Ran))
	return "", ""
}

// recordRun records, before the first change, that destructive action a
// runs now. When it cannot be recorded, a does not run: its once-only rule
// would not survive a restart.
func (e *Executor) recordRun(a plan.Action) error {
	e.destructive[a.ID] = true // at most once in this process, whatever happens next
	now := e.Clock.Now().UTC()
	return e.put(a.ID, func(r *state.Action) {
		if r.Ran.IsZero() {
			r.Ran = now
		}
		r.Target = target(a)
	})
}

// recordOutcome records how destructive action a ended: converged, failed
// (not run again by the loop), refused (nothing was destroyed, so the record
// is as it was before this run) or interrupted by ctx (a shutdown: the
// record stays as begun, and the next process continues it, as after a
// kill).
func (e *Executor) recordOutcome(ctx context.Context, a plan.Action, before state.Action, res *Result) {
	if ctx.Err() != nil && res.Status != Converged {
		return
	}
	now := e.Clock.Now().UTC()
	e.putLogged(a.ID, func(r *state.Action) {
		switch res.Status {
		case Converged:
			r.Finished = now
		case Refused:
			stuck := r.Stuck
			*r = before
			r.Stuck = stuck
		default:
			r.Failed = res.Detail
		}
	})
}
