package converge

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keel-storage/keel/probes"
	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/reconcile/apply/executor"
	"github.com/keel-storage/keel/reconcile/plan"
	"github.com/keel-storage/keel/reconcile/state"
	"github.com/keel-storage/keel/reconcile/state/statefile"
)

// The agent loads keel's state before it plans and records first sights in
// every mode (a dry run, the daemon in audit mode, as keel check and keel
// plan do): the audit-first rollout of docs/operations.md keeps the first
// sight from the audit week, so an LV made since under the name (a reused
// VM id) is kept at the switch to converge. A state that cannot be written
// is said (state.unrecorded) and removes nothing under the unrecorded
// name; one that cannot be read holds removals. The host is
// node-deps.txtar, recorded by e2e/wipe/reuse.sh in the test guest, with
// vmdata/vm-101-disk-0 declared absent (e2e/wipe/reuse.cue).
func TestPassUsesState(t *testing.T) {
	snap, cue := reuseInputs(t)
	const object = "vmdata/vm-101-disk-0"
	newAgent := func(t *testing.T, statePath string) *Loop { return replayLoop(t, snap, cue, statePath) }
	wipeOf := func(res PassResult) (planned bool, finding string) {
		for _, r := range res.Report.Results {
			if r.Action.Kind == plan.KindWipe && r.Action.Object == object {
				planned = true
			}
		}
		for _, f := range res.Findings {
			if f.Object == object {
				finding = string(f.ID) + ": " + f.Message + " | " + f.Observed
			}
		}
		return planned, finding
	}
	firstSeen := func(t *testing.T, p string) time.Time {
		t.Helper()
		st, err := statefile.Store{Path: p}.Load()
		if err != nil {
			t.Fatal(err)
		}
		return st.Absent[object].FirstSeen
	}

	t.Run("dry run: first sight and the VG recorded, removal planned", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "state.json")
		before := time.Now()
		res, err := newAgent(t, p).pass(context.Background(), Options{Mode: executor.Mode{DryRun: true}})
		if err != nil {
			t.Fatal(err)
		}
		if planned, f := wipeOf(res); !planned || !strings.HasPrefix(f, "lv.absent:") {
			t.Errorf("wipe planned %v, finding %q; want the removal planned", planned, f)
		}
		if fs := firstSeen(t, p); fs.Before(before.Add(-time.Second)) || fs.After(time.Now()) {
			t.Errorf("first sight of %s after a dry run: %v, want this pass", object, fs)
		}
		// The VG's identity is recorded in every mode too (vgmemory.go).
		st, err := statefile.Store{Path: p}.Load()
		if err != nil {
			t.Fatal(err)
		}
		if rec := st.VGs["vmdata"]; rec.UUID == "" {
			t.Errorf("a dry run did not record vmdata's vg_uuid: %+v", st.VGs)
		}
	})
	t.Run("act: first sight recorded before planning", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "state.json")
		before := time.Now()
		if _, err := newAgent(t, p).pass(context.Background(), Options{Mode: executor.Mode{}}); err != nil {
			t.Fatal(err)
		}
		if fs := firstSeen(t, p); fs.Before(before.Add(-time.Second)) || fs.After(time.Now()) {
			t.Errorf("first sight of %s: %v, want this pass", object, fs)
		}
	})
	t.Run("audit week, then converge: an LV made in the week is kept", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "state.json")
		// The audit week's first sight, recorded by a dry-run pass, moved
		// back to before the LV was made (the LV stands for the reused VM
		// id's new disk, made during the week).
		if _, err := newAgent(t, p).pass(context.Background(), Options{Mode: executor.Mode{DryRun: true}}); err != nil {
			t.Fatal(err)
		}
		h, err := probes.Probe(context.Background(), hostio.Replay(snap))
		if err != nil {
			t.Fatal(err)
		}
		made, ok := state.ParseLVTime(h.LVs[object].Fields.Get("lv_time"))
		if !ok {
			t.Fatalf("%s has no lv_time", object)
		}
		if _, err := (statefile.Store{Path: p}).Update(func(st *state.State) error {
			st.Absent[object] = state.Absent{FirstSeen: made.Add(-24 * time.Hour)}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		res, err := newAgent(t, p).pass(context.Background(), Options{Mode: executor.Mode{}})
		if err != nil {
			t.Fatal(err)
		}
		if planned, f := wipeOf(res); planned || !strings.HasPrefix(f, "lv.absent_reappeared:") || !strings.Contains(f, "after keel first saw") {
			t.Errorf("wipe planned %v, finding %q; want lv.absent_reappeared and no removal", planned, f)
		}
		if fs := firstSeen(t, p); !fs.Equal(made.Add(-24 * time.Hour)) {
			t.Errorf("the converge pass moved the first sight to %v", fs)
		}
	})
	t.Run("state unwritable: said, nothing removed under the name", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "state.json")
		// A lock that cannot be opened stands for a read-only /var/lib/keel:
		// the state reads (empty) but no first sight can be written.
		if err := os.Mkdir(p+".lock", 0o700); err != nil {
			t.Fatal(err)
		}
		res, err := newAgent(t, p).pass(context.Background(), Options{Mode: executor.Mode{}})
		if err != nil {
			t.Fatal(err)
		}
		if planned, f := wipeOf(res); planned || !strings.HasPrefix(f, "lv.absent_reappeared:") || !strings.Contains(f, "no record") {
			t.Errorf("wipe planned %v, finding %q; want no removal for the unrecorded name", planned, f)
		}
		var said bool
		for _, f := range res.Findings {
			if f.ID == plan.StateUnrecorded && f.Object == p && strings.Contains(f.Message, object) {
				said = true
			}
		}
		if !said {
			t.Errorf("no state.unrecorded finding for %s in %v", p, res.Findings)
		}
	})
	t.Run("bound to another LV: reported, not planned", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "state.json")
		st := state.New()
		st.Bind(object, state.LV{UUID: "5lW7H0-HqYX-BTd1-cB84-I0i9-4fY9-fr62pX"}, time.Now().Add(-time.Hour))
		st.Removed(object, "5lW7H0-HqYX-BTd1-cB84-I0i9-4fY9-fr62pX", time.Now().Add(-time.Hour))
		if err := (statefile.Store{Path: p}).Save(st); err != nil {
			t.Fatal(err)
		}
		res, err := newAgent(t, p).pass(context.Background(), Options{Mode: executor.Mode{}})
		if err != nil {
			t.Fatal(err)
		}
		if planned, f := wipeOf(res); planned || !strings.HasPrefix(f, "lv.absent_reappeared:") {
			t.Errorf("wipe planned %v, finding %q; want lv.absent_reappeared and no removal", planned, f)
		}
	})
	t.Run("corrupt state: removal held, file untouched", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "state.json")
		if err := os.WriteFile(p, []byte("{\"version\": 1, \"absent\": {"), 0o600); err != nil {
			t.Fatal(err)
		}
		res, err := newAgent(t, p).pass(context.Background(), Options{Mode: executor.Mode{}})
		if err != nil {
			t.Fatal(err)
		}
		if planned, f := wipeOf(res); planned || !strings.Contains(f, "held") || !strings.Contains(f, p) {
			t.Errorf("wipe planned %v, finding %q; want the removal held, naming %s", planned, f, p)
		}
		if b, _ := os.ReadFile(p); string(b) != "{\"version\": 1, \"absent\": {" {
			t.Errorf("corrupt state rewritten: %q", b)
		}
	})
}

// A removal whose lvremove succeeded but whose end keel never recorded (a
// kill while lvremove ran: e2e/kill) is recorded at the next pass that
// finds the LV's uuid gone from its whole VG, so the LV could never be
// removed twice should it come back; a binding whose LV still exists stays
// open, and a dry run writes nothing. Host: node-deps.txtar (guest capture).
func TestPassSettlesFinishedRemovals(t *testing.T) {
	snap, cue := reuseInputs(t)
	h, err := probes.Probe(context.Background(), hostio.Replay(snap))
	if err != nil {
		t.Fatal(err)
	}
	present := h.LVs["vmdata/vm-101-disk-0"]
	if present == nil {
		t.Fatal("node-deps has no vmdata/vm-101-disk-0")
	}
	const goneUUID = "kIlLeD-duRi-nglv-remo-veXX-XXXX-XXXXXX" // no LV of the host has it
	run := func(t *testing.T, dry bool) *state.State {
		p := filepath.Join(t.TempDir(), "state.json")
		st := &state.State{Absent: map[string]state.Absent{}, Actions: map[string]state.Action{}}
		st.Bind("vmdata/vm-105-disk-0", state.LV{UUID: goneUUID}, time.Now().Add(-time.Hour))
		st.Bind("vmdata/vm-101-disk-0", state.LV{UUID: present.UUID}, time.Now().Add(-time.Hour))
		if err := (statefile.Store{Path: p}).Save(st); err != nil {
			t.Fatal(err)
		}
		a := replayLoop(t, snap, cue, p)
		if _, err := a.pass(context.Background(), Options{Mode: executor.Mode{DryRun: dry}}); err != nil {
			t.Fatal(err)
		}
		got, err := statefile.Store{Path: p}.Load()
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	t.Run("act", func(t *testing.T) {
		st := run(t, false)
		if b := st.Absent["vmdata/vm-105-disk-0"].Bound; len(b) != 1 || b[0].Removed.IsZero() {
			t.Errorf("the LV gone from its VG is not recorded removed: %+v", b)
		}
		if b := st.Absent["vmdata/vm-101-disk-0"].Bound; len(b) != 1 || !b[0].Removed.IsZero() {
			t.Errorf("an LV still there is recorded removed: %+v", b)
		}
	})
	t.Run("dry run", func(t *testing.T) {
		st := run(t, true)
		if b := st.Absent["vmdata/vm-105-disk-0"].Bound; len(b) != 1 || !b[0].Removed.IsZero() {
			t.Errorf("a dry run recorded a removal: %+v", b)
		}
	})
}

// replayLoop is a loop on a replayed guest capture with the desired state
// cue (as reuse.cue) and keel's state at statePath.
func replayLoop(t *testing.T, snap *hostio.Snapshot, cue []byte, statePath string) *Loop {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "reuse.cue"), cue, 0o644); err != nil {
		t.Fatal(err)
	}
	a := New([]string{dir}, Wiring{Source: hostio.Replay(snap), StatePath: statePath,
		DpkgDir: t.TempDir(), LVMConfPath: filepath.Join(t.TempDir(), "lvm.conf"), FileRoot: t.TempDir()})
	a.skipOwnerCheck = true
	if err := a.Load(a.Read()); err != nil {
		t.Fatal(err)
	}
	return a
}

// reuseInputs reads the host node-deps.txtar (recorded by e2e/wipe/reuse.sh
// in the test guest) and its desired state e2e/wipe/reuse.cue.
func reuseInputs(t *testing.T) (*hostio.Snapshot, []byte) {
	t.Helper()
	snap, err := hostio.ReadSnapshotFile("../../reconcile/apply/wipe/testdata/node-deps.txtar")
	if err != nil {
		t.Fatal(err)
	}
	cue, err := os.ReadFile("../../e2e/wipe/reuse.cue")
	if err != nil {
		t.Fatal(err)
	}
	return snap, cue
}
