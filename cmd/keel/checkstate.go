package main

import (
	"time"

	"github.com/keel-storage/keel/reconcile/plan"
	"github.com/keel-storage/keel/reconcile/plan/removal"
	"github.com/keel-storage/keel/reconcile/state"
	"github.com/keel-storage/keel/schema/spec"
)

// checkMemory is keel's state as keel check and keel plan judge absent LVs
// with. Reading the desired state is when keel first sees its absent
// names, so their first sight is recorded here too (keel's own memory, not
// the host's storage: check and plan still change nothing on the host);
// when the state cannot be written the plan says so (state.unrecorded) and
// the check goes on. A node snapshot is another host, whose state keel
// does not have: it is judged as keel would on its first pass there, and
// nothing is recorded.
func checkMemory(cfg *spec.Config, node string) plan.Memory {
	now := time.Now()
	today := spec.WaiverDay(now)
	decl := removal.Declared{}
	for name, vg := range cfg.VolumeGroups {
		decl[name] = vg.AbsentNames()
	}
	names := removal.AbsentNames(decl)
	if node != "" {
		fresh := state.New()
		fresh.See(names, now)
		return plan.Memory{Absent: fresh.Absent, Today: today}
	}
	store := stateStore()
	st, err := store.LoadSeeing(names, now)
	if st == nil {
		return plan.Memory{Held: err.Error(), Today: today}
	}
	// The operators' holds and keel's records of suspended devices, as
	// the daemon plans with them: keel check shows each hold in force and
	// how long a suspended device has waited.
	mem := plan.Memory{Absent: st.Absent, Pvmoves: st.Pvmoves, Today: today, StatePath: store.Path,
		Now: now, Holds: st.Holds, Suspended: st.Suspended}
	if err != nil {
		mem.Unrecorded = err.Error()
	}
	return mem
}
