package main

import (
	"time"

	"github.com/keel-storage/keel/reconcile/plan"
	"github.com/keel-storage/keel/reconcile/state/statefile"
	"github.com/keel-storage/keel/schema/spec"
)

// checkMemory is keel's state as keel check judges absent LVs with: read,
// never written (check changes nothing). A node snapshot is another host,
// whose state keel does not have: it is judged as keel would on its first
// pass there.
func checkMemory(node string) plan.Memory {
	today := spec.WaiverDay(time.Now())
	if node != "" {
		return plan.Memory{Today: today}
	}
	st, err := statefile.Store{}.Load()
	if err != nil {
		return plan.Memory{Held: err.Error(), Today: today}
	}
	return plan.Memory{Absent: st.Absent, Today: today}
}
