package statefile

import (
	"time"

	"github.com/keel-storage/keel/reconcile/state"
)

// LoadSeeingVGs is Load that also records the first sight of every declared
// VG in seen (name -> vg_uuid) without a record, and drops the record of
// every name in gone (State.SeeVGs), writing the file only when that changes
// something. Every mode that reads the desired state calls it after its
// probe (check, plan, a dry run, the daemon in audit): a VG first seen in an
// audit week is remembered when keel begins to act.
func (s Store) LoadSeeingVGs(seen map[string]string, gone []string, now time.Time) (*state.State, error) {
	st, err := s.Load()
	if err != nil || !st.SeeVGs(seen, gone, now) {
		return st, err
	}
	return s.Update(func(u *state.State) error {
		u.SeeVGs(seen, gone, now)
		return nil
	})
}

// LoadSeeingSuspended is Load that also brings the records of stuck
// suspended devices in line with one pass (State.SeeSuspended), writing
// the file only when that changes something.
func (s Store) LoadSeeingSuspended(quiet map[string]bool, now time.Time) (*state.State, error) {
	st, err := s.Load()
	if err != nil || !st.SeeSuspended(quiet, now) {
		return st, err
	}
	return s.Update(func(u *state.State) error {
		u.SeeSuspended(quiet, now)
		return nil
	})
}
