package wipe

import (
	"bytes"
	"context"
	"errors"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/keel-storage/keel/reconcile/plan/removal"
)

// countAfter returns an open count reader that answers 1 (keel's own open)
// until cond holds and n afterwards, counting its calls.
func countAfter(n int, cond func() bool, calls *int) func(string) (int, error) {
	return func(string) (int, error) {
		*calls++
		if cond() {
			return n, nil
		}
		return 1, nil
	}
}

func fileBytes(t *testing.T, f *os.File) []byte {
	t.Helper()
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRemoverCheckRefusesPlainOpener(t *testing.T) {
	dev := newFileDevice(t, 1<<20, true)
	ex := &fakeExec{}
	r := testRemover(t, ex, map[string]*fileDevice{"vms/vm-100-disk-0": dev})
	var calls int
	r.OpenCount = countAfter(2, func() bool { return true }, &calls)
	r.OpenGrace = 20 * time.Millisecond
	err := r.Check([]removal.Target{{VG: "vms", LV: "vm-100-disk-0", Active: true, Mode: removal.ModeZeroOut}})
	if !errors.Is(err, ErrInUse) || !errors.Is(err, removal.ErrRefused) || !strings.Contains(err.Error(), "open 1 time(s) besides keel") {
		t.Fatalf("got %v", err)
	}
	if len(ex.argvs) != 0 || calls < 2 {
		t.Fatalf("commands %v, %d count reads (the grace period re-reads)", ex.argvs, calls)
	}
}

// A process that opens the LV with plain O_RDWR right after the rename (as
// qemu would) is seen before the first write: nothing is written, the LV
// gets its name back and loses the tag.
func TestRemoverGivesBackWhenOpenedAfterRename(t *testing.T) {
	dev := newFileDevice(t, 3<<20, true)
	before := fileBytes(t, dev.f)
	ex := &fakeExec{}
	r := testRemover(t, ex, map[string]*fileDevice{"vms/vm-100-disk-0": dev, "vms/del-vm-100-disk-0": dev})
	var calls int
	renamed := func() bool { return slices.Contains(ex.argvs, "lvrename vms vm-100-disk-0 del-vm-100-disk-0") }
	r.OpenCount = countAfter(2, renamed, &calls)
	r.OpenGrace = 20 * time.Millisecond
	tg := removal.Target{VG: "vms", LV: "vm-100-disk-0", Active: true, Mode: removal.ModeZeroOut}
	if err := r.Check([]removal.Target{tg}); err != nil {
		t.Fatal(err)
	}
	err := r.Remove(context.Background(), []removal.Target{tg})
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), "nothing written, named back") {
		t.Fatalf("got %v", err)
	}
	want := []string{
		"lvchange --addtag keel_wipe vms/vm-100-disk-0",
		"lvrename vms vm-100-disk-0 del-vm-100-disk-0",
		"lvrename vms del-vm-100-disk-0 vm-100-disk-0",
		"lvchange --deltag keel_wipe vms/vm-100-disk-0",
	}
	if !reflect.DeepEqual(ex.argvs, want) {
		t.Fatalf("commands:\n%s", strings.Join(ex.argvs, "\n"))
	}
	if !bytes.Equal(fileBytes(t, dev.f), before) || len(dev.calls) != 0 {
		t.Fatalf("the device was written (%d calls)", len(dev.calls))
	}
}

// An opener that appears during the wipe stops it between two steps; the
// LV stays del-<name> (part of it is already cleared) and is not removed.
func TestRemoverStopsWhenOpenedDuringWipe(t *testing.T) {
	dev := newFileDevice(t, 4<<20, true)
	ex := &fakeExec{}
	r := testRemover(t, ex, map[string]*fileDevice{"vms/vm-100-disk-0": dev, "vms/del-vm-100-disk-0": dev})
	var calls int
	r.OpenCount = countAfter(2, func() bool { return len(dev.calls) >= 2 }, &calls)
	r.OpenGrace = 20 * time.Millisecond
	tg := removal.Target{VG: "vms", LV: "vm-100-disk-0", Active: true, Mode: removal.ModeZeroOut}
	err := r.Remove(context.Background(), []removal.Target{tg})
	if err == nil || errors.Is(err, ErrInUse) || !errors.Is(err, errOpenedDuringWipe) || !strings.Contains(err.Error(), "resumes it") {
		t.Fatalf("got %v", err)
	}
	if len(dev.calls) != 2 {
		t.Fatalf("%d steps ran, want 2 before the opener was seen", len(dev.calls))
	}
	for _, a := range ex.argvs {
		if strings.HasPrefix(a, "lvremove") || strings.Contains(a, "del-vm-100-disk-0 vm-100-disk-0") {
			t.Fatalf("ran %q after a partial wipe", a)
		}
	}
}

// udev's blkid or an LVM scan opens a device for a moment: an open count
// that drops back within the grace period is no refusal.
func TestRemoverToleratesTransientOpener(t *testing.T) {
	dev := newFileDevice(t, 2<<20, true)
	ex := &fakeExec{}
	r := testRemover(t, ex, map[string]*fileDevice{"vms/vm-100-disk-0": dev, "vms/del-vm-100-disk-0": dev})
	var calls int
	r.OpenCount = countAfter(2, func() bool { return calls <= 3 }, &calls)
	r.OpenGrace = time.Second
	tg := removal.Target{VG: "vms", LV: "vm-100-disk-0", Active: true, Mode: removal.ModeZeroOut}
	if err := r.Check([]removal.Target{tg}); err != nil {
		t.Fatal(err)
	}
	if err := r.Remove(context.Background(), []removal.Target{tg}); err != nil {
		t.Fatal(err)
	}
	allZero(t, dev.f)
}

// A thin LV whose device does not discard (pool created with --discards
// ignore) is never zero-filled instead: lvremove alone frees its chunks.
func TestRemoverThinWithoutDiscardIsNotZeroFilled(t *testing.T) {
	dev := newFileDevice(t, 2<<20, true)
	before := fileBytes(t, dev.f)
	ex := &fakeExec{}
	r := testRemover(t, ex, map[string]*fileDevice{"tvg/del-vm-1": dev})
	r.Limits = func(string) (QueueLimits, error) { return QueueLimits{Dev: "dm-7"}, nil }
	tg := removal.Target{VG: "tvg", LV: "vm-1", Active: true, Mode: removal.ModeDiscard, NoZeroFill: true}
	if err := r.Remove(context.Background(), []removal.Target{tg}); err != nil {
		t.Fatal(err)
	}
	if ex.argvs[len(ex.argvs)-1] != "lvremove --yes tvg/del-vm-1" {
		t.Fatalf("commands %v", ex.argvs)
	}
	if !bytes.Equal(fileBytes(t, dev.f), before) || len(dev.calls) != 0 {
		t.Fatal("a thin LV without discard was zero-filled")
	}
}
