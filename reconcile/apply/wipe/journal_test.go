package wipe

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keel-storage/keel/reconcile/plan/removal"
)

// stopAfter cancels the wipe's context after n steps, as systemd's
// watchdog or a SIGKILL would stop keel midway.
type stopAfter struct {
	*fileDevice
	mu     sync.Mutex
	n      int
	cancel context.CancelFunc
	synced int
}

func (d *stopAfter) ZeroOut(off, n uint64) error {
	d.mu.Lock()
	d.n--
	if d.n == 0 {
		d.cancel()
	}
	d.mu.Unlock()
	return d.fileDevice.ZeroOut(off, n)
}

func (d *stopAfter) Sync() error {
	d.mu.Lock()
	d.synced++
	d.mu.Unlock()
	return nil
}

type stopCloser struct{ *stopAfter }

func (stopCloser) Close() error { return nil }

func TestWipeResumesFromCheckpoint(t *testing.T) {
	const size = 8 << 20
	dev := newFileDevice(t, size, true)
	ctx, cancel := context.WithCancel(context.Background())
	stop := &stopAfter{fileDevice: dev, n: 3, cancel: cancel}
	ex := &fakeExec{}
	r := testRemover(t, ex, nil)
	r.Open = func(string) (DeviceCloser, error) { return stopCloser{stop}, nil }
	r.Journal = DirJournal(t.TempDir())
	r.CheckpointEvery = time.Hour // only the final checkpoint, when the wipe stops
	tg := removal.Target{VG: "vms", LV: "vm-101-disk-0", UUID: "Abc123-4567", Active: true, Size: size, Mode: removal.ModeZeroOut}
	err := r.Remove(ctx, []removal.Target{tg})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("first run: %v", err)
	}
	cp, ok, err := r.Journal.Load(tg.UUID)
	if err != nil || !ok || cp.Offset != 3<<20 || cp.Mode != removal.ModeZeroOut || cp.Name != "vms/del-vm-101-disk-0" {
		t.Fatalf("checkpoint %+v %v %v, want 3 MiB of zeroout", cp, ok, err)
	}
	if stop.synced == 0 {
		t.Fatal("checkpoint saved without flushing the device")
	}

	// A new process resumes the renamed LV: it starts at 3 MiB, not 0.
	dev.calls = nil
	stop.cancel = func() {}
	tg.Resume = true
	if err := r.Remove(context.Background(), []removal.Target{tg}); err != nil {
		t.Fatal(err)
	}
	if len(dev.calls) == 0 || dev.calls[0][0] != 3<<20 {
		t.Fatalf("resumed run's steps %v, want the first at 3 MiB", dev.calls)
	}
	allZero(t, dev.f)
	if _, ok, _ := r.Journal.Load(tg.UUID); ok {
		t.Fatal("checkpoint left after lvremove")
	}
	if last := ex.argvs[len(ex.argvs)-1]; last != "lvremove --yes vms/del-vm-101-disk-0" {
		t.Fatalf("commands %v", ex.argvs)
	}

	// A checkpoint that does not match the LV (another size: not this
	// LV's) is not trusted: the wipe starts at 0.
	if err := r.Journal.Save(Checkpoint{LVUUID: tg.UUID, Mode: removal.ModeZeroOut, Size: size * 2, Offset: 4 << 20}); err != nil {
		t.Fatal(err)
	}
	dev.calls = nil
	if err := r.Remove(context.Background(), []removal.Target{tg}); err != nil {
		t.Fatal(err)
	}
	if dev.calls[0][0] != 0 {
		t.Fatalf("a foreign checkpoint was trusted: first step at %d", dev.calls[0][0])
	}
}

func TestDirJournal(t *testing.T) {
	dir := t.TempDir()
	j := DirJournal(filepath.Join(dir, "wipe"))
	if _, ok, err := j.Load("u-1"); ok || err != nil {
		t.Fatalf("empty journal: %v %v", ok, err)
	}
	if err := j.Save(Checkpoint{LVUUID: "u-1", Mode: removal.ModeDiscard, Size: 10, Offset: 5}); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(filepath.Join(dir, "wipe")); st.Mode().Perm() != 0o700 {
		t.Errorf("journal directory mode %v", st.Mode().Perm())
	}
	if c, ok, err := j.Load("u-1"); !ok || err != nil || c.Offset != 5 || c.Version != checkpointVersion {
		t.Fatalf("load %+v %v %v", c, ok, err)
	}
	// Another version, or garbage, is an error (and so not trusted).
	os.WriteFile(filepath.Join(dir, "wipe", "u-2.json"), []byte(`{"version":9,"lvUUID":"u-2"}`), 0o600)
	if _, ok, err := j.Load("u-2"); ok || err == nil || !strings.Contains(err.Error(), "version 9") {
		t.Fatalf("version 9: %v %v", ok, err)
	}
	if _, _, err := j.Load("../etc/passwd"); err == nil {
		t.Fatal("a path accepted as an LV UUID")
	}
	if err := j.Delete("u-1"); err != nil {
		t.Fatal(err)
	}
	if err := j.Delete("u-1"); err != nil {
		t.Fatalf("deleting twice: %v", err)
	}
}
