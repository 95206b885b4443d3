package executor

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/keel-storage/keel/reconcile/plan"
	"github.com/keel-storage/keel/reconcile/state"
)

// memRecords is keel's state file as the executor sees it, shared by the
// executors of successive "processes" in a test.
type memRecords struct {
	mu      sync.Mutex
	recs    map[string]state.Action
	loadErr error
	putErr  error
	puts    int
}

func (m *memRecords) Load() (map[string]state.Action, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.loadErr != nil {
		return nil, m.loadErr
	}
	out := map[string]state.Action{}
	for k, v := range m.recs {
		out[k] = v
	}
	return out, nil
}

func (m *memRecords) Put(id string, a state.Action) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.putErr != nil {
		return m.putErr
	}
	m.puts++
	if a.Empty() {
		delete(m.recs, id)
	} else {
		m.recs[id] = a
	}
	return nil
}

// process is one keel process: a fresh executor over the shared records,
// whose wiper counts its calls and answers with wipeErr.
type process struct {
	*harness
	r       *recRunner
	wipes   int
	wipeErr error
}

func newProcess(recs *memRecords, opts Options, mode Mode) *process {
	x, r, _, _ := setup(0, opts, mode)
	p := &process{harness: x, r: r}
	x.Records = recs
	x.Wipe = func(ctx context.Context, _ plan.WipeSpec) error {
		p.wipes++
		if p.wipeErr == nil {
			return ctx.Err()
		}
		return p.wipeErr
	}
	return p
}

func wipeAction(uuid string) plan.Action {
	return plan.Action{ID: "lv.absent:vms/vm-101-disk-0", Kind: plan.KindWipe, Class: plan.Destructive, Object: "vms/vm-101-disk-0",
		Wipe: &plan.WipeSpec{VG: "vms", LV: "vm-101-disk-0", Mode: "zeroout", StepMax: 32 << 20, UUID: uuid}}
}

func TestStuckSurvivesRestart(t *testing.T) {
	recs := &memRecords{recs: map[string]state.Action{}}
	opts := Options{MaxAttempts: 2}
	ctx := context.Background()
	first := newProcess(recs, opts, Mode{})
	a := compressionAction()
	f := []plan.Finding{vdoFinding("off")}
	if rep, _ := first.Apply(ctx, []plan.Action{a}, f); rep.Results[0].Status != Stuck {
		t.Fatalf("first process: %+v", rep.Results[0])
	}
	if recs.recs[a.ID].Stuck == nil {
		t.Fatalf("stuck record not written: %+v", recs.recs)
	}
	// A restarted daemon with nothing changed: stuck, reported, not run.
	second := newProcess(recs, opts, Mode{})
	rep, _ := second.Apply(ctx, []plan.Action{a}, f)
	if rep.Results[0].Status != Stuck || len(rep.Findings) != 1 || rep.Findings[0].ID != plan.ReconcileStuck || len(second.r.ran) != 0 {
		t.Fatalf("restarted process: %+v, ran %q", rep, second.r.ran)
	}
	// A dry run neither tries it nor forgets it.
	dry := newProcess(recs, opts, Mode{DryRun: true, Retry: true})
	if rep, _ := dry.Apply(ctx, []plan.Action{a}, f); rep.Results[0].Status != Stuck || recs.recs[a.ID].Stuck == nil {
		t.Fatalf("dry run: %+v, records %+v", rep.Results[0], recs.recs)
	}
	// keel apply, run by a person, tries it again.
	manual := newProcess(recs, opts, Mode{Retry: true})
	manual.Apply(ctx, []plan.Action{a}, f)
	if len(manual.r.mutating()) == 0 {
		t.Fatal("keel apply did not try a stuck action again")
	}
	// The host converged by other means: the record goes.
	if _, err := second.Apply(ctx, nil, nil); err != nil || len(recs.recs) != 0 {
		t.Fatalf("records of an action no longer planned kept: %+v (%v)", recs.recs, err)
	}
}

func TestDestructiveNeverRepeatedAcrossRestarts(t *testing.T) {
	ctx := context.Background()
	t.Run("finished", func(t *testing.T) {
		recs := &memRecords{recs: map[string]state.Action{}}
		first := newProcess(recs, Options{}, Mode{})
		a := wipeAction("uuid-A")
		if rep, _ := first.Apply(ctx, []plan.Action{a}, nil); rep.Results[0].Status != Converged {
			t.Fatalf("%+v", rep.Results[0])
		}
		r := recs.recs[a.ID]
		if r.Ran.IsZero() || r.Finished.IsZero() || r.Target != "uuid-A" {
			t.Fatalf("record %+v", r)
		}
		// Planned again (the LV is still listed, e.g. LVM had not caught
		// up): a new process never runs it again, whatever the mode.
		for _, m := range []Mode{{}, {Retry: true}, {Maintenance: true}} {
			p := newProcess(recs, Options{}, m)
			rep, _ := p.Apply(ctx, []plan.Action{a}, nil)
			if p.wipes != 0 || rep.Results[0].Status != Skipped || !strings.Contains(rep.Results[0].Detail, "already finished") {
				t.Fatalf("mode %+v: %+v, wipes %d", m, rep.Results[0], p.wipes)
			}
		}
	})
	t.Run("failed", func(t *testing.T) {
		recs := &memRecords{recs: map[string]state.Action{}}
		first := newProcess(recs, Options{}, Mode{})
		first.wipeErr = errors.New("blkdiscard: Input/output error")
		a := wipeAction("uuid-A")
		first.Apply(ctx, []plan.Action{a}, nil)
		if first.wipes != 1 || !strings.Contains(recs.recs[a.ID].Failed, "Input/output error") {
			t.Fatalf("wipes %d, record %+v", first.wipes, recs.recs[a.ID])
		}
		// A restart loop, with the desired state unchanged and changed (a
		// new fingerprint): never run, reported stuck with the removal by
		// hand as its remedy.
		for i, m := range []Mode{{}, {Retry: true}, {Retry: true}} {
			b := a
			if i == 2 {
				b.Wipe = &plan.WipeSpec{VG: "vms", LV: "vm-101-disk-0", Mode: "discard", StepMax: 32 << 20, UUID: "uuid-A"}
			}
			p := newProcess(recs, Options{}, m)
			rep, _ := p.Apply(ctx, []plan.Action{b}, nil)
			res := rep.Results[0]
			if p.wipes != 0 || res.Status != Stuck || !strings.Contains(res.Detail, "Input/output error") ||
				len(rep.Findings) != 1 || rep.Findings[0].ID != plan.ReconcileStuck || !strings.HasSuffix(rep.Findings[0].Remedy, "keel wipe vms/vm-101-disk-0") {
				t.Fatalf("restart %d: %+v, wipes %d", i, rep, p.wipes)
			}
		}
	})
	t.Run("killed mid-run is continued, once per process", func(t *testing.T) {
		recs := &memRecords{recs: map[string]state.Action{}}
		a := wipeAction("uuid-A")
		// What a SIGKILL leaves: begun, no outcome.
		recs.recs[a.ID] = state.Action{Ran: newClock().Now(), Target: "uuid-A"}
		p := newProcess(recs, Options{}, Mode{})
		if rep, _ := p.Apply(ctx, []plan.Action{a}, nil); p.wipes != 1 || rep.Results[0].Status != Converged {
			t.Fatalf("interrupted wipe not continued: %+v, wipes %d", rep.Results[0], p.wipes)
		}
		if !recs.recs[a.ID].Ran.Equal(newClock().Now()) {
			t.Fatalf("first run time lost: %+v", recs.recs[a.ID])
		}
		// Another LV under the name, with the old record begun: not run.
		recs.recs[a.ID] = state.Action{Ran: newClock().Now(), Target: "uuid-A"}
		q := newProcess(recs, Options{}, Mode{})
		rep, _ := q.Apply(ctx, []plan.Action{wipeAction("uuid-B")}, nil)
		if q.wipes != 0 || !strings.Contains(rep.Results[0].Detail, "uuid-B") {
			t.Fatalf("another LV under the name: %+v, wipes %d", rep.Results[0], q.wipes)
		}
	})
	t.Run("shutdown mid-run leaves it to be continued", func(t *testing.T) {
		recs := &memRecords{recs: map[string]state.Action{}}
		a := wipeAction("uuid-A")
		cctx, cancel := context.WithCancel(ctx)
		p := newProcess(recs, Options{}, Mode{})
		p.Wipe = func(context.Context, plan.WipeSpec) error { p.wipes++; cancel(); return context.Canceled }
		p.Apply(cctx, []plan.Action{a}, nil)
		r := recs.recs[a.ID]
		if p.wipes != 1 || r.Ran.IsZero() || r.Failed != "" || r.Stuck != nil {
			t.Fatalf("record after shutdown %+v (wipes %d)", r, p.wipes)
		}
		q := newProcess(recs, Options{}, Mode{})
		if q.Apply(ctx, []plan.Action{a}, nil); q.wipes != 1 {
			t.Fatal("wipe stopped by a shutdown not continued by the next process")
		}
	})
	t.Run("records unreadable or unwritable", func(t *testing.T) {
		a := wipeAction("uuid-A")
		bad := &memRecords{recs: map[string]state.Action{}, loadErr: errors.New("state.json: not a valid keel state file")}
		p := newProcess(bad, Options{}, Mode{})
		rep, _ := p.Apply(ctx, []plan.Action{a}, nil)
		if p.wipes != 0 || rep.Results[0].Status != Refused || len(rep.Findings) != 1 || rep.Findings[0].ID != plan.ReconcileRefused {
			t.Fatalf("unreadable records: %+v, wipes %d", rep, p.wipes)
		}
		ro := &memRecords{recs: map[string]state.Action{}, putErr: errors.New("read-only file system")}
		q := newProcess(ro, Options{}, Mode{})
		rep, _ = q.Apply(ctx, []plan.Action{a}, nil)
		if q.wipes != 0 || rep.Results[0].Status != Refused || !strings.Contains(rep.Results[0].Detail, "read-only file system") {
			t.Fatalf("unwritable records: %+v, wipes %d", rep.Results[0], q.wipes)
		}
	})
}
