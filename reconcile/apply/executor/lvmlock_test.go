//go:build linux

package executor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/keel-storage/keel/reconcile/plan"
)

// TestLVMLockHeld: a VG lock file held exclusively (as an LVM command that
// changes the VG holds it, lvm2 lib/locking/file_locking.c) reads as held;
// once released, or when there is no lock file, as free.
func TestLVMLockHeld(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "V_kvg")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	holder, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if err := syscall.Flock(int(holder.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	held := LVMLockHeld(dir)
	if ok, err := held("kvg"); !ok || err != nil {
		t.Errorf("held while locked: %v, %v", ok, err)
	}
	if err := syscall.Flock(int(holder.Fd()), syscall.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	if ok, err := held("kvg"); ok || err != nil {
		t.Errorf("held after unlock: %v, %v", ok, err)
	}
	if ok, err := held("other"); ok || err != nil {
		t.Errorf("held without a lock file: %v, %v", ok, err)
	}
}

// TestResumeWaitsForLVMCommand: the resume of a suspended device is not run
// while an LVM command holds its VG (the command's own suspend), and runs
// once nothing holds it.
func TestResumeWaitsForLVMCommand(t *testing.T) {
	a := plan.Action{ID: "dm.suspended:kvg-other", Kind: plan.KindCommand, Class: plan.Live, Object: "kvg-other",
		Commands: [][]string{{"dmsetup", "clear", "kvg-other"}, {"dmsetup", "resume", "kvg-other"}}}
	e, r, _, _ := setup(1, Options{}, Mode{})
	var asked []string
	locked := true
	e.VGLockHeld = func(vg string) (bool, error) { asked = append(asked, vg); return locked, nil }
	err := e.guard(context.Background(), a)
	if err == nil || !strings.Contains(err.Error(), "holds vg kvg") || len(r.ran) != 0 {
		t.Errorf("guard with the VG locked: %v, ran %q", err, r.ran)
	}
	locked = false
	if err := e.guard(context.Background(), a); err != nil {
		t.Errorf("guard with the VG free: %v", err)
	}
	if strings.Join(asked, " ") != "kvg kvg" {
		t.Errorf("asked for VGs %q, want kvg twice", asked)
	}
}
