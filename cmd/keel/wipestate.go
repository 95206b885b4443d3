package main

import (
	"time"

	"github.com/keel-storage/keel/cmd/keel/internal/agent"
	"github.com/keel-storage/keel/reconcile"
	"github.com/keel-storage/keel/reconcile/state"
	"github.com/keel-storage/keel/reconcile/wipe"
	"github.com/keel-storage/keel/schema"
)

// checkWipeOwnership applies keel apply's ownership rule to the desired
// state keel wipe reads: whoever can write it can make keel destroy data.
func checkWipeOwnership(configs []string) error {
	if len(configs) == 0 {
		configs = []string{schema.DefaultPath}
	}
	return agent.CheckOwnership(configs)
}

// wipeMemory reads keel's state for keel wipe into req. With --absent (the
// daemon's rule) and when it will act, it first records the first sight of
// every absent name it has no record of, as keel apply does. A state that
// cannot be read is kept in req.Held: every absent-driven removal and
// resume is then refused, and a removal by name fails before its first
// change because it cannot be recorded (wipe.RemoveRecorded).
func wipeMemory(store state.Store, decl wipe.Declared, req *wipe.Request, act bool) {
	load := store.Load
	if act && req.RequireAbsent {
		load = func() (*state.State, error) { return store.LoadSeeing(wipe.AbsentNames(decl), time.Now()) }
	}
	st, err := load()
	if err != nil {
		req.Held = err.Error()
		return
	}
	req.Known = st.Absent
}

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
