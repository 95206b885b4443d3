package hostio

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// suspendedBlock reports whether p is a device-mapper block device that is
// suspended now, or is stacked on one (sysfs's slaves links, followed
// down), from the dm/suspended attributes under root's /sys
// (drivers/md/dm-sysfs.c): a read of it would block until the device is
// resumed. Anything else, or an attribute that cannot be read, is not.
func suspendedBlock(root, p string) bool {
	const sysBlock = "/sys/block"
	fi, err := os.Stat(p)
	if err != nil || fi.Mode()&os.ModeDevice == 0 || fi.Mode()&os.ModeCharDevice != 0 {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	dev := uint64(st.Rdev)
	sys := DirFS(root)
	target, err := os.Readlink(sys.path(fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(dev), unix.Minor(dev))))
	if err != nil {
		return false
	}
	var down func(k string, depth int) bool
	down = func(k string, depth int) bool {
		if depth > 32 {
			return false
		}
		if b, err := readFile(sys.path(sysBlock + "/" + k + "/dm/suspended")); err == nil && strings.TrimSpace(string(b)) == "1" {
			return true
		}
		slaves, _ := sys.ReadDir(sysBlock + "/" + k + "/slaves")
		for _, s := range slaves {
			if down(s, depth+1) {
				return true
			}
		}
		return false
	}
	return down(filepath.Base(target), 0)
}

// openRead opens p read-only with flags, as os.Open does (retrying on
// EINTR, its error an *os.PathError), without the poller.
func openRead(p string, flags int) (int, error) {
	for {
		fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC|flags, 0)
		switch {
		case err == nil:
			return fd, nil
		case err != unix.EINTR:
			return -1, &os.PathError{Op: "open", Path: p, Err: err}
		}
	}
}

// readFile returns what os.ReadFile returns, the same bytes and errors,
// in open, read until the end, close: os.ReadFile also asks the poller to
// take the descriptor (epoll_ctl, refused for a regular file) and stats
// the file to size its buffer, two more system calls per file. A pass
// reads about a thousand small sysfs attributes beside a running `lvm
// fullreport` (probe.go), so the calls saved end that goroutine earlier
// and keel check with it (docs/benchmark-history.md has the figures). The
// buffer starts at 512 bytes, enough for a sysfs attribute, and grows as a
// larger file needs. As os.ReadFile, a read error returns what was read
// before it.
func readFile(p string) ([]byte, error) {
	fd, err := openRead(p, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	buf := make([]byte, 0, 512)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // grow
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return buf, &os.PathError{Op: "read", Path: p, Err: err}
		case n == 0:
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

// readDirNames returns the names os.ReadDir returns, unsorted, and its
// errors, in open, getdents until the end, close (the calls readFile saves,
// saved for the two directories, holders and slaves, a pass lists for each
// block device).
func readDirNames(p string) ([]string, error) {
	fd, err := openRead(p, unix.O_DIRECTORY) // as os.ReadDir opens
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var buf [8 << 10]byte
	names := []string{}
	for {
		n, err := unix.Getdents(fd, buf[:])
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return nil, &os.PathError{Op: "readdirent", Path: p, Err: err}
		case n <= 0:
			return names, nil
		}
		_, _, names = syscall.ParseDirent(buf[:n], -1, names) // skips "." and ".."
	}
}

// readDirect reads n bytes at off with O_DIRECT into a page-aligned buffer.
// It returns errNoDirect when the file system refuses O_DIRECT.
func readDirect(p string, off int64, n int) ([]byte, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_DIRECT, 0)
	if errors.Is(err, syscall.EINVAL) {
		return nil, errNoDirect
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, errNoDirect
	}
	defer syscall.Munmap(buf)
	got, err := f.ReadAt(buf, off)
	if errors.Is(err, syscall.EINVAL) {
		return nil, errNoDirect
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return append([]byte(nil), buf[:got]...), nil
}
