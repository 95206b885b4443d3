package wipe

import (
	"fmt"
	"io"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// BlockDevice is a block device opened for wiping with the kernel's
// BLKZEROOUT and BLKDISCARD ioctls.
type BlockDevice struct {
	f    *os.File
	path string
}

// OpenBlock opens path read-write and exclusively (O_EXCL), so the open fails
// with EBUSY while the device is mounted, held by device-mapper or LVM (for
// example as the PV of a stacked VG), or opened exclusively by anyone else.
// It refuses anything that is not a block device.
func OpenBlock(path string) (*BlockDevice, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("device %s: %w", path, err)
	}
	if fi.Mode()&os.ModeDevice == 0 || fi.Mode()&os.ModeCharDevice != 0 {
		return nil, fmt.Errorf("device %s: not a block device", path)
	}
	f, err := os.OpenFile(path, os.O_RDWR|unix.O_EXCL|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("device %s: exclusive open: %w", path, err)
	}
	return &BlockDevice{f: f, path: path}, nil
}

// Path is the path the device was opened with.
func (d *BlockDevice) Path() string { return d.path }

// Size is the device size in bytes.
func (d *BlockDevice) Size() (uint64, error) {
	n, err := d.f.Seek(0, io.SeekEnd)
	if err != nil {
		return 0, fmt.Errorf("device %s: size: %w", d.path, err)
	}
	return uint64(n), nil
}

// ZeroOut issues one BLKZEROOUT ioctl for [off, off+n). The kernel uses
// WRITE ZEROES when the device supports it and otherwise writes zero pages.
func (d *BlockDevice) ZeroOut(off, n uint64) error {
	return d.rangeIoctl(unix.BLKZEROOUT, off, n)
}

// Discard issues one BLKDISCARD ioctl for [off, off+n).
func (d *BlockDevice) Discard(off, n uint64) error {
	return d.rangeIoctl(unix.BLKDISCARD, off, n)
}

func (d *BlockDevice) rangeIoctl(req uintptr, off, n uint64) error {
	r := [2]uint64{off, n}
	for {
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, d.f.Fd(), req, uintptr(unsafe.Pointer(&r)))
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return errno
		}
		return nil
	}
}

// Close closes the device.
func (d *BlockDevice) Close() error { return d.f.Close() }

// Sync flushes the device's volatile write cache (fsync(2) of a block
// device sends a flush to it), so that the bytes cleared so far are on
// stable storage before a checkpoint says they are.
func (d *BlockDevice) Sync() error { return d.f.Sync() }
