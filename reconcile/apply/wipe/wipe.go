// Package wipe removes logical volumes safely: the LV is renamed to
// del-<name> (so a crash leaves a visible marker), its blocks are zeroed with
// the BLKZEROOUT ioctl or discarded with BLKDISCARD in steps, with progress,
// and only then is it removed with lvremove.
//
// The stepping engine (Wipe) works on a Device, a small seam over the two
// ioctls, so it can be tested on a regular file. OpenBlock gives the real
// block-device implementation. The LVM side (Remover) runs mutating commands
// through an Executor of its own; it never goes through the read-only probes.
// What to remove and how is planned by reconcile/plan/removal on the observed
// model; this package only carries a plan's targets out.
package wipe

import (
	"context"
	"errors"
	"fmt"

	"github.com/keel-storage/keel/reconcile/plan/removal"
)

// DefaultStep is the size of one ioctl when nothing caps it: 32 MiB, the
// value oVirt and Proxmox VE settled on as a balance of speed and load.
const DefaultStep = 32 << 20

// sectorSize is the unit the block ioctls require offsets and lengths in.
const sectorSize = 512

// Device is what the stepping engine needs from a block device. Offsets and
// lengths are in bytes and sector-aligned.
type Device interface {
	// Size is the device size in bytes.
	Size() (uint64, error)
	// ZeroOut makes [off, off+n) read as zeroes.
	ZeroOut(off, n uint64) error
	// Discard gives [off, off+n) back to the layer below.
	Discard(off, n uint64) error
}

// ErrBadStep is returned for a step that is zero or not a multiple of 512.
var ErrBadStep = errors.New("step must be a non-zero multiple of 512 bytes")

// Wipe clears the whole of dev in steps of step bytes (the last step may be
// shorter), adding each finished step to p. It stops between steps when ctx
// is cancelled and returns ctx's error. name is used in errors only.
func Wipe(ctx context.Context, name string, dev Device, mode removal.Mode, step uint64, p *Progress) error {
	return WipeFrom(ctx, name, dev, mode, step, 0, p)
}

// WipeFrom is Wipe starting at byte start (a multiple of the sector size, a
// checkpoint of an earlier run of the same pass): the bytes below start
// count as done.
func WipeFrom(ctx context.Context, name string, dev Device, mode removal.Mode, step, start uint64, p *Progress) error {
	if step == 0 || step%sectorSize != 0 {
		return fmt.Errorf("wipe %s: step %d: %w", name, step, ErrBadStep)
	}
	var op func(off, n uint64) error
	switch mode {
	case removal.ModeZeroOut:
		op = dev.ZeroOut
	case removal.ModeDiscard:
		op = dev.Discard
	default:
		return fmt.Errorf("wipe %s: unknown mode %q", name, mode)
	}
	size, err := dev.Size()
	if err != nil {
		return fmt.Errorf("wipe %s: size: %w", name, err)
	}
	// Block ioctls need whole sectors; an LV is always a whole number of
	// extents, so a tail only shows up on odd devices.
	size -= size % sectorSize
	if start%sectorSize != 0 || start > size {
		return fmt.Errorf("wipe %s: resume at byte %d of %d: not a sector boundary inside the device", name, start, size)
	}
	if p != nil {
		p.beginAt(size, start)
	}
	for off := start; off < size; off += step {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("wipe %s: stopped at byte %d of %d: %w", name, off, size, err)
		}
		n := min(step, size-off)
		if err := op(off, n); err != nil {
			return fmt.Errorf("wipe %s: %s at byte %d (+%d): %w", name, mode, off, n, err)
		}
		if p != nil {
			p.add(n)
		}
	}
	return nil
}
