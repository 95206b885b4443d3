package hostio

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
)

// MaxReadAt bounds one ReadAt call; the VDO geometry and super block need
// one 4 KiB block each.
const MaxReadAt = 1 << 20

// FS is read access to the host's files under one root. Paths are absolute
// host paths ("/sys/block"); the root is applied by the implementation.
type FS interface {
	// ReadFile returns a whole (small) file.
	ReadFile(name string) ([]byte, error)
	// ReadDir returns the sorted entry names of a directory.
	ReadDir(name string) ([]string, error)
	// Readlink returns the target of a symbolic link.
	Readlink(name string) (string, error)
	// ReadAt returns n bytes at offset off (n ≤ MaxReadAt); a short read at
	// the end of the file returns what was there.
	ReadAt(name string, off int64, n int) ([]byte, error)
}

// DirFS is an FS rooted at a directory of this machine ("/" for the live host).
type DirFS string

func (d DirFS) path(name string) string {
	return filepath.Join(string(d), filepath.FromSlash(path.Clean("/"+name)))
}

// ReadFile reads name under the root (readFile: as os.ReadFile, in fewer
// system calls on Linux).
func (d DirFS) ReadFile(name string) ([]byte, error) {
	return readFile(d.path(name))
}

// ReadDir lists name under the root, sorted (readDirNames: as os.ReadDir,
// in fewer system calls on Linux).
func (d DirFS) ReadDir(name string) ([]string, error) {
	names, err := readDirNames(d.path(name))
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	return names, nil
}

// Readlink reads the symbolic link name under the root.
func (d DirFS) Readlink(name string) (string, error) {
	return os.Readlink(d.path(name))
}

// ReadAt reads n bytes at off from name under the root; a suspended
// device-mapper device is refused with ErrSuspended. Aligned reads
// bypass the page cache where the file allows it (O_DIRECT): a block
// device's cache can hold blocks a kernel target (dm-vdo) has since rewritten.
func (d DirFS) ReadAt(name string, off int64, n int) ([]byte, error) {
	if n < 0 || n > MaxReadAt || off < 0 {
		return nil, fmt.Errorf("read %s at %d: length %d out of range", name, off, n)
	}
	if suspendedBlock(string(d), d.path(name)) {
		// The read would wait until someone resumes the device.
		return nil, suspendedError(name)
	}
	if off%DirectAlign == 0 && n%DirectAlign == 0 && n > 0 {
		if b, err := readDirect(d.path(name), off, n); !errors.Is(err, errNoDirect) {
			return b, err
		}
	}
	f, err := os.Open(d.path(name))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, n)
	got, err := f.ReadAt(buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf[:got], nil
}

// DirectAlign is the alignment of the reads DirFS.ReadAt makes with
// O_DIRECT, past the page cache: a ReadAt whose offset and length are
// multiples of it reads the device, not what the cache holds of it.
const DirectAlign = 4096

// errNoDirect means the file cannot be read with O_DIRECT; read it normally.
var errNoDirect = errors.New("O_DIRECT not available")

// ErrSuspended is what a read of a suspended device-mapper device returns
// instead of blocking.
var ErrSuspended = errors.New("device-mapper device is suspended")

// suspendedError names the suspended devices in a read's error.
func suspendedError(name string) error {
	return fmt.Errorf("%s: %w", name, ErrSuspended)
}
