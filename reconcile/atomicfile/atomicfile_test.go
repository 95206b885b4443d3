package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.conf")
	if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	st, _ := os.Stat(p)
	if err != nil || string(b) != "new\n" || st.Mode().Perm() != 0o644 {
		t.Fatalf("content %q mode %v err %v", b, st.Mode().Perm(), err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".*keel-*")); len(m) != 0 {
		t.Fatalf("temporary files left: %v", m)
	}
	err = Write(filepath.Join(dir, "missing", "x"), nil, 0o644)
	if err == nil || !strings.Contains(err.Error(), "missing/x") {
		t.Fatalf("error does not name the file: %v", err)
	}
}

// A write that fails before its rename (a crash, a full disk) leaves the
// previous file whole and no temporary file behind; the temporary file is
// complete and in the same directory (so that the rename is atomic).
func TestWriteFailingBeforeRename(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "state.json")
	if err := Write(p, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var tmpSeen string
	rename = func(from, _ string) error {
		if b, err := os.ReadFile(from); err != nil || string(b) != "new\n" {
			t.Errorf("temporary file %s before the rename: %v %q, want the new content, complete", from, err, b)
		}
		tmpSeen = from
		return errors.New("injected crash before rename")
	}
	defer func() { rename = os.Rename }()
	if err := Write(p, []byte("new\n"), 0o600); err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("write with a failing rename: %v, want an error naming %s", err, p)
	}
	if filepath.Dir(tmpSeen) != dir {
		t.Errorf("temporary file %s is not beside %s", tmpSeen, p)
	}
	if b, _ := os.ReadFile(p); string(b) != "old\n" {
		t.Errorf("a failed write changed the file: %q", b)
	}
	if _, err := os.Stat(tmpSeen); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary file %s left behind: %v", tmpSeen, err)
	}
}

// Write fsyncs the temporary file, complete, before the rename and the
// directory after it: without the first, a crash after the rename can leave
// the new name on a file whose data never reached the disk (rename(2)
// orders no data writes; ext4 flushes such a file at the rename only under
// its auto_da_alloc default); without the second, the rename itself may be
// lost (fsync(2): syncing a file does not sync its directory entry).
func TestWriteSyncsFileThenDirectory(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "lvm.conf")
	var events []string
	fsync = func(f *os.File) error {
		if f.Name() == dir {
			events = append(events, "sync dir")
		} else {
			b, err := os.ReadFile(f.Name())
			events = append(events, fmt.Sprintf("sync %s holding %q (%v)", filepath.Dir(f.Name()), b, err))
		}
		return f.Sync()
	}
	rename = func(from, to string) error {
		events = append(events, "rename to "+filepath.Base(to))
		return os.Rename(from, to)
	}
	defer func() { fsync, rename = (*os.File).Sync, os.Rename }()
	if err := Write(p, []byte("devices {\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := []string{fmt.Sprintf("sync %s holding %q (<nil>)", dir, "devices {\n}\n"), "rename to lvm.conf", "sync dir"}
	if !slices.Equal(events, want) {
		t.Errorf("events %q, want %q", events, want)
	}
}

// A writer killed between CreateTemp and the rename leaves its temporary
// file; the next write of the same file removes it when its writer's PID
// no longer runs (or its name carries none, as before the PID was in it),
// and keeps one whose writer still runs and the temporary files of other
// files.
func TestWriteRemovesStaleTemporaries(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "lvm.conf")
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := cmd.Process.Pid   // reaped: no process has it now, barring reuse
	files := map[string]bool{ // name: kept
		fmt.Sprintf(".lvm.conf.keel-%d-123", dead):        false,
		".lvm.conf.keel-4242424242":                       false,
		fmt.Sprintf(".lvm.conf.keel-%d-456", os.Getpid()): true,
		fmt.Sprintf(".other.conf.keel-%d-789", dead):      true,
	}
	for name := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("part"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := Write(p, []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, kept := range files {
		_, err := os.Stat(filepath.Join(dir, name))
		if kept != (err == nil) {
			t.Errorf("%s: kept %v, want %v", name, err == nil, kept)
		}
	}
}
