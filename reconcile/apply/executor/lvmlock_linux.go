//go:build linux

package executor

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
)

// LVMLockHeld returns a VGLockHeld for LVM's file locks in dir
// (reconcile.SuspendedLockDir): a VG's lock file is V_<vg>, which an LVM
// command that changes the VG holds exclusively with flock(2) while it runs
// (lvm2 lib/locking/file_locking.c). It takes the lock shared without
// waiting and lets it go at once: refused means a writer holds it. A lock
// file that does not exist is held by no one.
func LVMLockHeld(dir string) func(vg string) (bool, error) {
	return func(vg string) (bool, error) {
		f, err := os.Open(filepath.Join(dir, "V_"+vg))
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		defer f.Close()
		switch err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); {
		case errors.Is(err, syscall.EWOULDBLOCK):
			return true, nil
		case err != nil:
			return false, err
		}
		return false, syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	}
}
