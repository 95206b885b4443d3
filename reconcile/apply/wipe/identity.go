package wipe

import (
	"context"
	"fmt"
	"time"

	"github.com/keel-storage/keel/reconcile/state"
	"github.com/keel-storage/keel/reconcile/state/statefile"
)

// identity refuses, under the daemon's rule (RequireAbsent), an LV that is
// not the one its absent entry was written for (state.Judge): a reused
// name, or an LV keel cannot tell from one. A removal asked for by name on
// the command line is the operator's own decision and is not judged.
func (r Request) identity(name string, lv LVInfo) error {
	if !r.RequireAbsent {
		return nil
	}
	return r.judge(name, lv)
}

// judge applies state.Judge to lv under name with the request's records.
func (r Request) judge(name string, lv LVInfo) error {
	if r.Held != "" {
		return fmt.Errorf("lv %s: %w: keel's state cannot be read (%s); nothing is removed for absent until it can", name, ErrRefused, r.Held)
	}
	rec, known := r.Known[name]
	if why := state.Judge(rec, known, state.LV{UUID: lv.UUID, Created: lv.Created}); why != "" {
		return fmt.Errorf("lv %s: %w: not the LV the absent entry was written for (lv.absent_reappeared): %s; to remove it anyway run: keel wipe %s",
			name, ErrRefused, why, name)
	}
	return nil
}

// RemoveRecorded removes targets with rm and keeps keel's state in store:
// every target is bound to its name (UUID and creation time) and saved
// before the first change to any of them, and each is marked removed as
// soon as its lvremove succeeded. So after a crash the next run finishes
// exactly these LVs, and an LV that later appears under one of the names
// is never taken for them. now is the clock (time.Now outside tests).
func RemoveRecorded(ctx context.Context, rm *Remover, store statefile.Store, targets []Target, now func() time.Time) error {
	if _, err := store.Update(func(st *state.State) error {
		for _, t := range targets {
			st.Bind(t.Name(), state.LV{UUID: t.UUID, Created: t.Created}, now())
		}
		return nil
	}); err != nil {
		return fmt.Errorf("record the LVs to remove before changing them: %w", err)
	}
	for _, t := range targets {
		if err := rm.Remove(ctx, []Target{t}); err != nil {
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
