package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
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
