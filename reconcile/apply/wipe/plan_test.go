package wipe

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/reconcile/plan/removal"
)

// fakeExec records commands and fails the ones listed in fail.
type fakeExec struct {
	argvs []string
	fail  map[string]error
}

func (f *fakeExec) Run(_ context.Context, c hostio.Cmd) (hostio.Result, error) {
	f.argvs = append(f.argvs, c.String())
	return hostio.Result{}, f.fail[c.Name]
}

// testRemover wipes regular files standing in for the LVs' device nodes.
func testRemover(t *testing.T, ex *fakeExec, devs map[string]*fileDevice) *Remover {
	return &Remover{
		Exec: ex,
		Step: 1 << 20,
		Path: func(vg, lv string) string { return vg + "/" + lv },
		Open: func(path string) (DeviceCloser, error) {
			d, ok := devs[path]
			if !ok {
				return nil, fmt.Errorf("device %s: %w", path, os.ErrNotExist)
			}
			return nopCloser{d}, nil
		},
		Limits: func(path string) (QueueLimits, error) {
			return QueueLimits{Dev: "dm-9", WriteZeroesMax: 8 << 20, DiscardMax: 8 << 20}, nil
		},
		OpenCount: func(string) (int, error) { return 1, nil }, // keel's own open only
	}
}

type nopCloser struct{ Device }

func (nopCloser) Close() error { return nil }

func TestRemoverRenamesWipesRemoves(t *testing.T) {
	del := newFileDevice(t, 3<<20, true)
	ex := &fakeExec{}
	r := testRemover(t, ex, map[string]*fileDevice{"vms/vm-100-disk-0": del, "vms/del-vm-100-disk-0": del})
	var started, finished []removal.Mode
	r.Started = func(_ removal.Target, m removal.Mode, _ *Progress) { started = append(started, m) }
	r.Finished = func(_ removal.Target, m removal.Mode, p *Progress, err error) {
		if err != nil || !p.Done() {
			t.Errorf("pass %s: err %v done %v", m, err, p.Done())
		}
		finished = append(finished, m)
	}
	tg := removal.Target{VG: "vms", LV: "vm-100-disk-0", Active: true, Mode: removal.ModeZeroOut, DiscardAfter: true}
	if err := r.Check([]removal.Target{tg}); err != nil {
		t.Fatal(err)
	}
	if err := r.Remove(context.Background(), []removal.Target{tg}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"lvchange --addtag keel_wipe vms/vm-100-disk-0",
		"lvrename vms vm-100-disk-0 del-vm-100-disk-0",
		"lvremove --yes vms/del-vm-100-disk-0",
	}
	if !reflect.DeepEqual(ex.argvs, want) {
		t.Fatalf("commands:\n%s", strings.Join(ex.argvs, "\n"))
	}
	if !reflect.DeepEqual(started, []removal.Mode{removal.ModeZeroOut, removal.ModeDiscard}) || len(finished) != 2 {
		t.Fatalf("passes started %v finished %v", started, finished)
	}
	allZero(t, del.f)
}

func TestRemoverResumeInactive(t *testing.T) {
	del := newFileDevice(t, 2<<20, true)
	ex := &fakeExec{}
	r := testRemover(t, ex, map[string]*fileDevice{"vms/del-vm-102-disk-0": del})
	tg := removal.Target{VG: "vms", LV: "vm-102-disk-0", Resume: true, Mode: removal.ModeDiscard}
	if err := r.Check([]removal.Target{tg}); err != nil {
		t.Fatal(err)
	}
	if err := r.Remove(context.Background(), []removal.Target{tg}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"lvchange --activate y --ignoreactivationskip vms/del-vm-102-disk-0",
		"lvremove --yes vms/del-vm-102-disk-0",
	}
	if !reflect.DeepEqual(ex.argvs, want) {
		t.Fatalf("commands:\n%s", strings.Join(ex.argvs, "\n"))
	}
	allZero(t, del.f)
}

func TestRemoverCheckRefusesBusyDevice(t *testing.T) {
	ex := &fakeExec{}
	r := testRemover(t, ex, nil)
	r.Open = func(path string) (DeviceCloser, error) {
		return nil, fmt.Errorf("device %s: exclusive open: %w", path, errors.New("device or resource busy"))
	}
	err := r.Check([]removal.Target{{VG: "vms", LV: "vm-100-disk-0", Active: true, Mode: removal.ModeZeroOut}})
	if !errors.Is(err, removal.ErrRefused) || !strings.Contains(err.Error(), "busy") {
		t.Fatalf("got %v", err)
	}
	if len(ex.argvs) != 0 {
		t.Fatalf("check ran %v", ex.argvs)
	}
}

func TestRemoverInterruptedWipeKeepsDelLV(t *testing.T) {
	del := newFileDevice(t, 8<<20, true)
	ex := &fakeExec{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := testRemover(t, ex, nil)
	r.Open = func(string) (DeviceCloser, error) {
		return nopCloser{&cancelDevice{fileDevice: del, after: 3, cancel: cancel}}, nil
	}
	tg := removal.Target{VG: "vms", LV: "vm-100-disk-0", Active: true, Mode: removal.ModeZeroOut}
	err := r.Remove(ctx, []removal.Target{tg})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "now vms/del-vm-100-disk-0; keel wipe vms/vm-100-disk-0 resumes it") {
		t.Fatalf("got %v", err)
	}
	for _, a := range ex.argvs {
		if strings.HasPrefix(a, "lvremove") {
			t.Fatalf("lvremove ran after an interrupted wipe: %v", ex.argvs)
		}
	}
}

func TestRemoverStopsOnCommandFailure(t *testing.T) {
	ex := &fakeExec{fail: map[string]error{"lvrename": errors.New("exit status 5")}}
	r := testRemover(t, ex, nil)
	err := r.Remove(context.Background(), []removal.Target{{VG: "vms", LV: "a", Active: true, Mode: removal.ModeZeroOut}, {VG: "vms", LV: "b", Active: true, Mode: removal.ModeZeroOut}})
	if err == nil || !strings.Contains(err.Error(), "lv vms/a") {
		t.Fatalf("got %v", err)
	}
	if len(ex.argvs) != 2 {
		t.Fatalf("went on after a failure: %v", ex.argvs)
	}
}

func TestRemoverFallsBackWhenDiscardUnsupported(t *testing.T) {
	for _, tc := range []struct {
		tg   removal.Target
		want []removal.Mode
	}{
		{removal.Target{VG: "vms", LV: "a", Active: true, Mode: removal.ModeDiscard}, []removal.Mode{removal.ModeZeroOut}},
		{removal.Target{VG: "vms", LV: "a", Active: true, Mode: removal.ModeZeroOut, DiscardAfter: true}, []removal.Mode{removal.ModeZeroOut}},
	} {
		del := newFileDevice(t, 2<<20, true)
		ex := &fakeExec{}
		r := testRemover(t, ex, map[string]*fileDevice{"vms/del-a": del})
		r.Limits = func(string) (QueueLimits, error) { return QueueLimits{Dev: "dm-7"}, nil }
		var passes []removal.Mode
		r.Started = func(_ removal.Target, m removal.Mode, _ *Progress) { passes = append(passes, m) }
		if err := r.Remove(context.Background(), []removal.Target{tc.tg}); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(passes, tc.want) {
			t.Errorf("%+v: passes %v, want %v", tc.tg, passes, tc.want)
		}
		allZero(t, del.f)
		if last := ex.argvs[len(ex.argvs)-1]; last != "lvremove --yes vms/del-a" {
			t.Errorf("last command %q", last)
		}
	}
}
