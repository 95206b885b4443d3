package agent

import (
	"errors"
	"time"

	"github.com/keel-storage/keel/reconcile"
	"github.com/keel-storage/keel/reconcile/executor"
	"github.com/keel-storage/keel/reconcile/state"
	"github.com/keel-storage/keel/reconcile/wipe"
)

// absentNames are the absent entries ("vg/lv") of the desired state in force.
func (a *Agent) absentNames() []string {
	decl := wipe.Declared{}
	for vg, d := range a.desired.VolumeGroups {
		decl[vg] = d.Absent
	}
	return wipe.AbsentNames(decl)
}

// loadMemory reads keel's state before a plan and, unless dryRun, records
// the first sight of every absent name it has no record of yet (written
// only when there is one). With no absent name the file is not touched. A
// state that cannot be read holds every removal (Memory.Held).
func (a *Agent) loadMemory(dryRun bool) reconcile.Memory {
	names := a.absentNames()
	if len(names) == 0 {
		return reconcile.Memory{}
	}
	load := a.State.Load
	if !dryRun {
		load = func() (*state.State, error) { return a.State.LoadSeeing(names, time.Now()) }
	}
	st, err := load()
	if err != nil {
		a.Log.Error("keel's state cannot be read: removals are held", "err", err)
		return reconcile.Memory{Held: err.Error()}
	}
	return reconcile.Memory{Absent: st.Absent}
}

// wipeRefused turns a wipe refusal into the executor's refusal (not
// retried, reported as reconcile.refused) and leaves other errors alone.
func wipeRefused(err error) error {
	if errors.Is(err, wipe.ErrRefused) {
		return &executor.RefusedError{Reason: err.Error()}
	}
	return err
}
