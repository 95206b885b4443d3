// Package atomicfile replaces files so that a reader, or the next boot after
// a crash, sees either the old content or the new one, never a part: every
// file keel writes (lvm.conf and its backup, udev rules, check reports, the
// desired-state cache) goes through Write.
package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// rename is os.Rename; a test makes it fail between the write and the
// rename, as a crash would.
var rename = os.Rename

// fsync is (*os.File).Sync, called on the temporary file before the rename
// and on the directory after it; a test records the calls to see that
// both happen, in that order, since no test can observe durability itself.
var fsync = (*os.File).Sync

// Write replaces path with data: a temporary file in the same directory is
// written, fsync'd and given mode perm, renamed over path, and the
// directory is fsync'd so that the rename survives a crash (rename(2) is
// atomic within one file system; fsync(2) of the directory makes the new
// entry durable).
func Write(path string, data []byte, perm os.FileMode) error {
	err := write(path, data, func(f *os.File) error { return f.Chmod(perm) })
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// write is Write with the temporary file's attributes set by attrs.
func write(path string, data []byte, attrs func(*os.File) error) error {
	dir := filepath.Dir(path)
	removeStale(dir, filepath.Base(path))
	f, err := os.CreateTemp(dir, tempPrefix(filepath.Base(path))+strconv.Itoa(os.Getpid())+"-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after a successful rename
	_, err = f.Write(data)
	if err == nil {
		err = attrs(f)
	}
	if err == nil {
		err = fsync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = rename(tmp, path)
	}
	if err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	defer d.Close()
	if err := fsync(d); err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	return nil
}

// tempPrefix starts the name of every temporary file written for the file
// base: ".base.keel-", then the writer's PID, "-" and CreateTemp's random
// part.
func tempPrefix(base string) string { return "." + base + ".keel-" }

// removeStale removes the temporary files for base in dir that a writer
// killed between CreateTemp and the rename left (SIGKILL, a power cut):
// those whose writer's PID no longer runs. A file of a writer still running
// (another keel process writing the same file) is left alone; one whose
// name carries no PID is removed. Failures are ignored: a leftover is
// untidy, never wrong, since nothing reads it.
func removeStale(dir, base string) {
	names, err := filepath.Glob(filepath.Join(dir, tempPrefix(base)+"*"))
	if err != nil {
		return
	}
	for _, name := range names {
		rest := strings.TrimPrefix(filepath.Base(name), tempPrefix(base))
		pidText, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if ok && err == nil && pid > 0 && running(pid) {
			continue
		}
		os.Remove(name)
	}
}

// running reports whether a process with this PID exists (kill(2) with
// signal 0: ESRCH when it does not; EPERM means it exists and is not ours).
func running(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
