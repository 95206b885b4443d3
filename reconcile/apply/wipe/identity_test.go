package wipe

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keel-storage/keel/probes/hostio"

	"github.com/keel-storage/keel/reconcile/plan/removal"
	"github.com/keel-storage/keel/reconcile/state"
	"github.com/keel-storage/keel/reconcile/state/statefile"
)

// RemoveRecorded saves the binding before the first command and marks each
// LV removed after its lvremove; a failure leaves the binding unfinished.
func TestRemoveRecorded(t *testing.T) {
	store := statefile.Store{Path: filepath.Join(t.TempDir(), "state.json")}
	now := func() time.Time { return time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC) }
	dev := newFileDevice(t, 2<<20, true)
	ex := &checkingExec{fakeExec: fakeExec{fail: map[string]error{}}}
	ex.before = func(argv []string) {
		if len(ex.argvs) > 0 {
			return
		}
		st, err := store.Load()
		if err != nil || len(st.Absent["vms/a"].Bound) != 1 || len(st.Absent["vms/b"].Bound) != 1 {
			t.Errorf("first command %v ran before both bindings were saved: %+v %v", argv, st, err)
		}
	}
	r := testRemover(t, &ex.fakeExec, map[string]*fileDevice{"vms/del-a": dev, "vms/del-b": dev})
	r.Exec = ex
	targets := []removal.Target{
		{VG: "vms", LV: "a", Active: true, Mode: removal.ModeZeroOut, UUID: "ua"},
		{VG: "vms", LV: "b", Active: true, Mode: removal.ModeZeroOut, UUID: "ub"},
	}
	ex.failOn = "lvremove --yes vms/del-b"
	if err := RemoveRecorded(context.Background(), r, store, targets, now); err == nil {
		t.Fatal("lvremove of b failed, RemoveRecorded did not")
	}
	st, err := store.Load()
	if err != nil {
		t.Fatal(err)
	}
	if b := st.Absent["vms/a"].Bound; len(b) != 1 || b[0].UUID != "ua" || !b[0].Removed.Equal(now()) {
		t.Errorf("vms/a: %+v, want ua removed", b)
	}
	if b := st.Absent["vms/b"].Bound; len(b) != 1 || b[0].UUID != "ub" || !b[0].Removed.IsZero() {
		t.Errorf("vms/b: %+v, want ub bound and unfinished", b)
	}
	// A state keel cannot write: nothing runs.
	bad := statefile.Store{Path: filepath.Join(t.TempDir(), "f", "state.json")}
	if err := (statefile.Store{Path: filepath.Dir(bad.Path)}).Save(state.New()); err != nil {
		t.Fatal(err) // a file where the state's directory should be
	}
	ex2 := &fakeExec{}
	r.Exec = ex2
	if err := RemoveRecorded(context.Background(), r, bad, targets[:1], now); err == nil || len(ex2.argvs) != 0 {
		t.Errorf("unwritable state: err %v, commands %v; want an error and no command", err, ex2.argvs)
	}
}

// checkingExec is fakeExec with a hook before each command and one
// command line that fails.
type checkingExec struct {
	fakeExec
	before func(argv []string)
	failOn string
}

func (c *checkingExec) Run(ctx context.Context, cmd hostio.Cmd) (hostio.Result, error) {
	argv := cmd.Argv()
	if c.before != nil {
		c.before(argv)
	}
	if strings.Join(argv, " ") == c.failOn {
		c.argvs = append(c.argvs, c.failOn)
		return hostio.Result{}, errors.New("injected failure")
	}
	return c.fakeExec.Run(ctx, cmd)
}
