package wipe

import (
	"context"
	"errors"
	"github.com/keel-storage/keel/probes/hostio"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keel-storage/keel/reconcile/state"
)

// The identity gate on the recorded host (node-setup.txtar, captured in the
// test guest): vms/vm-100-disk-0 is absent in e2e/wipe/wipe.cue, and its
// real lv_uuid and lv_time decide.
func TestPlanIdentityOnRecordedHost(t *testing.T) {
	inv := snapshotInventory(t, "node-setup.txtar")
	const name = "vms/vm-100-disk-0"
	lv := inv.LVs[name]
	if lv.UUID == "" || lv.Created.IsZero() {
		t.Fatalf("%s: uuid %q created %v: FromHost must carry lv_uuid and lv_time", name, lv.UUID, lv.Created)
	}
	before, after := lv.Created.Add(-time.Hour), lv.Created.Add(time.Hour)
	other := state.Binding{UUID: "AAAAAA-0000-0000-0000-0000-0000-000000", Started: before, Removed: before}
	for _, c := range []struct {
		name  string
		req   Request
		want  string // "" = planned; else a refusal containing it
		bound bool   // the target carries the LV's identity
	}{
		{"daemon rule, first sight", Request{RequireAbsent: true}, "", true},
		{"daemon rule, declared before it existed", Request{RequireAbsent: true, Known: map[string]state.Absent{name: {FirstSeen: before}}}, "lv.absent_reappeared", false},
		{"daemon rule, declared after", Request{RequireAbsent: true, Known: map[string]state.Absent{name: {FirstSeen: after}}}, "", true},
		{"daemon rule, another LV removed under the name", Request{RequireAbsent: true, Known: map[string]state.Absent{name: {FirstSeen: after, Bound: []state.Binding{other}}}}, "keel wipe " + name, false},
		{"daemon rule, state unreadable", Request{RequireAbsent: true, Held: "state x: corrupt"}, "state cannot be read", false},
		{"by hand, another LV removed under the name", Request{Known: map[string]state.Absent{name: {FirstSeen: after, Bound: []state.Binding{other}}}}, "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.req.Names, c.req.Mode = []string{name}, ModeDiscard
			targets, err := Plan(inv, scenarioDecl, c.req)
			if c.want != "" {
				if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), c.want) || len(targets) != 0 {
					t.Fatalf("got %v %+v, want a refusal containing %q", err, targets, c.want)
				}
				return
			}
			if err != nil || len(targets) != 1 {
				t.Fatalf("got %v %+v, want one target", err, targets)
			}
			if tg := targets[0]; tg.UUID != lv.UUID || !tg.Created.Equal(lv.Created) {
				t.Errorf("target identity %q %v, want %q %v", tg.UUID, tg.Created, lv.UUID, lv.Created)
			}
		})
	}
}

// A del-* LV is resumed only when it is the LV bound to its name.
func TestPlanResumeChecksIdentity(t *testing.T) {
	inv := snapshotInventory(t, "node-killed.txtar")
	del := inv.LVs["vms/del-big"]
	for _, c := range []struct {
		name   string
		known  map[string]state.Absent
		resume bool
	}{
		{"no record (keel wipe by hand of a name not absent)", nil, true},
		{"bound to it", map[string]state.Absent{"vms/big": {FirstSeen: del.Created, Bound: []state.Binding{{UUID: del.UUID, Started: del.Created}}}}, true},
		{"bound to another LV", map[string]state.Absent{"vms/big": {FirstSeen: del.Created, Bound: []state.Binding{{UUID: "other", Started: del.Created}}}}, false},
		{"created after first sight", map[string]state.Absent{"vms/big": {FirstSeen: del.Created.Add(-time.Minute)}}, false},
	} {
		targets, err := Plan(inv, scenarioDecl, Request{Mode: ModeDiscard, Known: c.known})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := len(targets) == 1 && targets[0].Resume; got != c.resume {
			t.Errorf("%s: resumed %v (targets %+v), want %v", c.name, got, targets, c.resume)
		}
	}
}

// RemoveRecorded saves the binding before the first command and marks each
// LV removed after its lvremove; a failure leaves the binding unfinished.
func TestRemoveRecorded(t *testing.T) {
	store := state.Store{Path: filepath.Join(t.TempDir(), "state.json")}
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
	targets := []Target{
		{VG: "vms", LV: "a", Active: true, Mode: ModeZeroOut, UUID: "ua"},
		{VG: "vms", LV: "b", Active: true, Mode: ModeZeroOut, UUID: "ub"},
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
	bad := state.Store{Path: filepath.Join(t.TempDir(), "f", "state.json")}
	if err := (state.Store{Path: filepath.Dir(bad.Path)}).Save(state.New()); err != nil {
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
