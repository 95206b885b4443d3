package converge

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/reconcile/plan"
	"github.com/keel-storage/keel/reconcile/state"
	"github.com/keel-storage/keel/reconcile/state/statefile"
)

// TestSeeSuspended: a pass records since when a stuck device was quiet and
// keeps that moment; a pass that finds nothing suspended drops the record,
// so that a later suspend under the same name waits afresh, from a new
// process too.
func TestSeeSuspended(t *testing.T) {
	p := filepath.Join(t.TempDir(), "state.json")
	loop := func() *Loop { return &Loop{state: statefile.Store{Path: p}, log: hclog.NewNullLogger()} }
	stuck := &model.Host{Suspended: []string{"vg-lv"}}
	l := loop()
	l.seeSuspended(stuck)
	first, ok := l.mem.Suspended["vg-lv"]
	if !ok || l.mem.Now.IsZero() {
		t.Fatalf("not recorded: %+v", l.mem)
	}
	l2 := loop()
	l2.seeSuspended(stuck)
	if got := l2.mem.Suspended["vg-lv"]; !got.QuietSince.Equal(first.QuietSince) {
		t.Errorf("quiet since moved from %v to %v", first.QuietSince, got.QuietSince)
	}
	loop().seeSuspended(&model.Host{})
	if st, err := (statefile.Store{Path: p}).Load(); err != nil || len(st.Suspended) != 0 {
		t.Errorf("a pass with nothing suspended kept %v (%v)", st.Suspended, err)
	}
}

// TestLoadHolds: the holds of keel's state reach the planner's memory.
func TestLoadHolds(t *testing.T) {
	p := filepath.Join(t.TempDir(), "state.json")
	s := statefile.Store{Path: p}
	if _, err := s.Update(func(st *state.State) error {
		st.Holds["bcache0"] = state.Hold{Reason: "drain", Since: time.Now()}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	l := &Loop{state: s, log: hclog.NewNullLogger()}
	mem := plan.Memory{Now: time.Now()}
	l.loadHolds(&mem)
	if mem.Holds["bcache0"].Reason != "drain" || l.holdsLogged["bcache0"].Reason != "drain" {
		t.Errorf("holds %v, logged %v", mem.Holds, l.holdsLogged)
	}
}
