package main

import (
	"github.com/keel-storage/keel/reconcile"
	"github.com/keel-storage/keel/reconcile/state"
)

// checkMemory is keel's state as keel check judges absent LVs with: read,
// never written (check changes nothing). A node snapshot is another host,
// whose state keel does not have: it is judged as keel would on its first
// pass there.
func checkMemory(node string) reconcile.Memory {
	if node != "" {
		return reconcile.Memory{}
	}
	st, err := state.Store{}.Load()
	if err != nil {
		return reconcile.Memory{Held: err.Error()}
	}
	return reconcile.Memory{Absent: st.Absent}
}
