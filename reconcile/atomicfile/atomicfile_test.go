package atomicfile

import (
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
