package converge

import (
	"time"

	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/reconcile/plan"
	"github.com/keel-storage/keel/reconcile/state"
)

// seeSuspended records, before a plan on h, since when each device found
// stuck suspended has had no LVM or dmsetup command on its VG
// (plan.SuspendedQuiet, state.State.SeeSuspended), and puts the records and
// the moment into the planner's memory: the wait agent.resumeSuspendedMinutes
// asks for is measured from them. It records in every mode, as first
// sights are, and a pass that finds nothing suspended drops every record
// (written only when there was one): a record left from an earlier suspend
// must not count as quiet time for the next one under the same name. A
// state that cannot be read or written leaves no record, and then nothing
// is resumed (plan.resumeWait).
func (l *Loop) seeSuspended(h *model.Host) {
	now := time.Now()
	l.mem.Now = now
	l.mem.Suspended = nil
	if h == nil {
		return
	}
	st, err := l.state.LoadSeeingSuspended(plan.SuspendedQuiet(h), now)
	if err != nil {
		if len(h.Suspended) > 0 {
			l.log.Error("keel's state: suspended devices not recorded, none is resumed", "err", err)
		}
		return
	}
	l.mem.Suspended = st.Suspended
}

// loadHolds puts the operators' holds (keel hold) into mem, and logs each
// hold that is new, lapsed or released since the last pass: the journal
// says what keel leaves alone, why and until when. A state that cannot be
// read holds nothing here; its removals are held (Memory.Held) and the
// error is logged where they are.
func (l *Loop) loadHolds(mem *plan.Memory) {
	st, err := l.state.Load()
	if err != nil {
		return
	}
	mem.Holds = st.Holds
	inForce := map[string]state.Hold{}
	for obj, h := range st.Holds {
		if !h.InForce(mem.Now) {
			if _, was := l.holdsLogged[obj]; was {
				l.log.Warn("hold lapsed: keel acts on the object again", "object", obj, "reason", h.Reason, "until", holdUntil(h))
			}
			continue
		}
		inForce[obj] = h
		if old, was := l.holdsLogged[obj]; !was || old != h {
			l.log.Info("hold in force: keel changes nothing on it", "object", obj, "reason", h.Reason, "until", holdUntil(h))
		}
	}
	for obj := range l.holdsLogged {
		if _, ok := st.Holds[obj]; !ok {
			l.log.Info("hold released: keel acts on the object again", "object", obj)
		}
	}
	l.holdsLogged = inForce
}

// holdUntil is a hold's expiry as logs and messages show it.
func holdUntil(h state.Hold) string {
	if h.Until.IsZero() {
		return "keel release"
	}
	return state.Stamp(h.Until)
}
