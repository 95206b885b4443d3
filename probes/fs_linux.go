package probes

import (
	"errors"
	"io"
	"os"
	"syscall"
)

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
