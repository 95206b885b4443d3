package probes

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
		if b, err := os.ReadFile(sys.path(sysBlock + "/" + k + "/dm/suspended")); err == nil && strings.TrimSpace(string(b)) == "1" {
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
