package wipe

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/keel-storage/keel/lvm"
	"github.com/keel-storage/keel/probes"
	"github.com/keel-storage/keel/reconcile/plan/removal"
)

// In use, checked at the last moment. An exclusive open (O_EXCL) fails
// while the device is mounted, held by a device-mapper table or opened
// exclusively, but not while a process holds it with a plain O_RDWR open,
// which is how qemu opens a VM's disk. The device-mapper open count
// (DM_DEV_STATUS, `dmsetup info -c -o open`) counts every open, so keel
// reads it in Check, again after the rename with the device open for the
// wipe (the count must then be keel's own 1), and before every step of
// the wipe.

// ErrInUse marks a refusal because another opener holds the LV; it wraps
// removal.ErrRefused. When it comes before the first write, the LV is given its
// name back.
var ErrInUse = fmt.Errorf("%w: in use", removal.ErrRefused)

// errOpenedDuringWipe stops a wipe that someone opened the device during.
var errOpenedDuringWipe = errors.New("another process opened the device during the wipe")

// DefaultOpenGrace is how long an open count above keel's own may last
// before keel refuses: udev's blkid and LVM's scans open a device for
// milliseconds after a change.
const DefaultOpenGrace = 2 * time.Second

const openPoll = 100 * time.Millisecond

func (r *Remover) openCount(dm string) (int, error) {
	if r.OpenCount != nil {
		return r.OpenCount(dm)
	}
	return probes.DMOpenCount(dm)
}

// unused waits until the dm device of vg/lv is open at most own times (the
// opens keel holds itself), for up to the grace period, and refuses with
// ErrInUse otherwise. An unreadable count refuses too.
func (r *Remover) unused(ctx context.Context, vg, lv string, own int) error {
	dm := lvm.Name{VG: vg, LV: lv}.DMName()
	grace := r.OpenGrace
	if grace == 0 {
		grace = DefaultOpenGrace
	}
	deadline := time.Now().Add(grace)
	for {
		n, err := r.openCount(dm)
		if err != nil {
			return fmt.Errorf("lv %s/%s: %w: cannot read its open count: %w", vg, lv, removal.ErrRefused, err)
		}
		if n <= own {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("lv %s/%s: %w: open %d time(s) besides keel for %s (a VM, a mount or another process; see dmsetup info -c -o name,open %s)",
				vg, lv, ErrInUse, n-own, grace, dm)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("lv %s/%s: open count: %w", vg, lv, ctx.Err())
		case <-time.After(openPoll):
		}
	}
}

// guardedDevice checks the open count before every step: before the first
// write a second opener is a refusal (ErrInUse); after it, the wipe stops.
type guardedDevice struct {
	DeviceCloser
	check func() error
	wrote bool
}

// guard wraps d, the open device of vg/lv, with the open-count check.
func (r *Remover) guard(ctx context.Context, d DeviceCloser, vg, lv string) *guardedDevice {
	return &guardedDevice{DeviceCloser: d, check: func() error { return r.unused(ctx, vg, lv, 1) }}
}

func (g *guardedDevice) before() error {
	err := g.check()
	if err == nil {
		return nil
	}
	if g.wrote && errors.Is(err, ErrInUse) {
		// Not ErrInUse any more: blocks are cleared, the name stays del-.
		return fmt.Errorf("%w: %v", errOpenedDuringWipe, err)
	}
	return err
}

// ZeroOut checks the open count, then zeroes.
func (g *guardedDevice) ZeroOut(off, n uint64) error {
	if err := g.before(); err != nil {
		return err
	}
	g.wrote = true
	return g.DeviceCloser.ZeroOut(off, n)
}

// Discard checks the open count, then discards.
func (g *guardedDevice) Discard(off, n uint64) error {
	if err := g.before(); err != nil {
		return err
	}
	g.wrote = true
	return g.DeviceCloser.Discard(off, n)
}

// giveBack undoes the tag and the rename of t after a refusal that came
// before anything was written, so the LV keeps its name for whoever opened
// it.
func (r *Remover) giveBack(t removal.Target, run func(argv ...string) error, refusal error) error {
	errs := []error{refusal}
	if err := run("lvrename", t.VG, removal.DelPrefix+t.LV, t.LV); err != nil {
		errs = append(errs, fmt.Errorf("naming it back failed, it stays %s: %w", t.DelName(), err))
	} else if err := run("lvchange", "--deltag", removal.Tag, t.Name()); err != nil {
		errs = append(errs, err)
	}
	return fmt.Errorf("lv %s: nothing written, named back: %w", t.Name(), errors.Join(errs...))
}
