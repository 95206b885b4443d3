package lvmconf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// DefaultDpkgDir is dpkg's administrative directory, which holds its locks.
const DefaultDpkgDir = "/var/lib/dpkg"

// ErrDpkgLocked is returned, with nothing written, while dpkg holds its
// lock: it may be replacing lvm.conf (a conffile of lvm2) right now. The
// next pass tries again.
var ErrDpkgLocked = errors.New("dpkg holds its lock, a package is being installed")

// dpkgLockFiles are dpkg's locks: lock-frontend, which apt and dpkg take
// first, and lock, the status database's (dpkg lib/dpkg/dbmodify.c,
// modstatdb_lock).
var dpkgLockFiles = []string{"lock-frontend", "lock"}

// dpkgLocked reports which of dpkg's locks in dir another process holds.
// dpkg locks a file with fcntl(F_SETLK) and a write lock over the whole
// file (lib/dpkg/file.c, file_lock), and tests one with F_GETLK
// (file_is_locked): keel asks the same question, taking nothing, so it
// never stops dpkg. A lock file that does not exist is held by no one.
func dpkgLocked(dir string) (string, error) {
	for _, name := range dpkgLockFiles {
		p := filepath.Join(dir, name)
		f, err := os.Open(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("dpkg lock %s: %w", p, err)
		}
		lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: 0, Len: 0}
		err = syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &lk)
		f.Close()
		if err != nil {
			return "", fmt.Errorf("dpkg lock %s: %w", p, err)
		}
		if lk.Type != syscall.F_UNLCK {
			return fmt.Sprintf("%s (pid %d)", p, lk.Pid), nil
		}
	}
	return "", nil
}
