package wipe

import (
	"context"
	"fmt"
	"time"

	"github.com/keel-storage/keel/reconcile/plan/removal"
	"github.com/keel-storage/keel/reconcile/state"
	"github.com/keel-storage/keel/reconcile/state/statefile"
)

// RemoveRecorded removes targets with rm and keeps keel's state in store:
// every target is bound to its name (UUID and creation time) and saved
// before the first change to any of them, and each is marked removed as
// soon as its lvremove succeeded. So after a crash the next run finishes
// exactly these LVs, and an LV that later appears under one of the names
// is never taken for them. now is the clock (time.Now outside tests).
func RemoveRecorded(ctx context.Context, rm *Remover, store statefile.Store, targets []removal.Target, now func() time.Time) error {
	if _, err := store.Update(func(st *state.State) error {
		for _, t := range targets {
			st.Bind(t.Name(), state.LV{UUID: t.UUID, Created: t.Created}, now())
		}
		return nil
	}); err != nil {
		return fmt.Errorf("record the LVs to remove before changing them: %w", err)
	}
	for _, t := range targets {
		if err := rm.Remove(ctx, []removal.Target{t}); err != nil {
			return err
		}
		if _, err := store.Update(func(st *state.State) error {
			st.Removed(t.Name(), t.UUID, now())
			return nil
		}); err != nil {
			return fmt.Errorf("lv %s: removed, but recording it failed: %w", t.Name(), err)
		}
	}
	return nil
}
