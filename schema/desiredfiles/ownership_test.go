package desiredfiles

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/keel-storage/keel/internal/testenv"
)

// desiredFile makes a directory (0755) holding desired.cue (0644), both
// owned by whoever runs the test, and a setup check that fails t.
func desiredFile(t *testing.T) (dir, f string, must func(error)) {
	t.Helper()
	dir = t.TempDir()
	f = filepath.Join(dir, "desired.cue")
	must = func(err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("setup: %v", err)
		}
	}
	must(os.Chmod(dir, 0o755))
	must(os.WriteFile(f, []byte("lvm: scanLVs: false\n"), 0o644))
	must(os.Chmod(f, 0o644)) // whatever the umask made of it
	return dir, f, must
}

func TestCheckOwnership(t *testing.T) {
	testenv.NeedRoot(t, "root-owned files, and a chown to another user")
	dir, f, must := desiredFile(t)
	if err := CheckOwnership([]string{dir}, os.Geteuid()); err != nil {
		t.Fatal(err)
	}
	must(os.Chmod(f, 0o666))
	if err := CheckOwnership([]string{dir}, os.Geteuid()); err == nil || !strings.Contains(err.Error(), "writable by group or others") {
		t.Fatalf("world-writable accepted: %v", err)
	}
	must(os.Chmod(f, 0o644))
	must(os.Chown(f, 1000, 1000))
	if err := CheckOwnership([]string{f}, os.Geteuid()); err == nil || !strings.Contains(err.Error(), "not root") {
		t.Fatalf("non-root owner accepted: %v", err)
	}
	must(os.Chmod(dir, 0o777))
	must(os.Chown(f, 0, 0))
	if err := CheckOwnership([]string{dir}, os.Geteuid()); err == nil || !strings.Contains(err.Error(), "writable by group or others") {
		t.Fatalf("a world-writable directory accepted: %v", err)
	}
}

// The ownership rule for keel running as root and as a user, with the
// effective uid faked so that it runs as any user: a user's run takes root's
// files and the user's own, root's run takes root's only, and nobody's run
// takes another user's files.
func TestCheckOwnershipAsUser(t *testing.T) {
	dir, f, must := desiredFile(t)
	st, err := os.Stat(f)
	must(err)
	user := int(st.Sys().(*syscall.Stat_t).Uid)
	if user == 0 {
		// Run as root: the directory stays root's, the file becomes a user's.
		user = 1000
		must(os.Chown(f, user, user))
	}
	for _, tt := range []struct {
		name string
		euid int
		want string // "" accepted, else a part of the error
	}{
		{"the user's own files, keel run as that user", user, ""},
		{"a user's files, keel run as root", 0, "not root"},
		{"a user's files, keel run as another user", user + 1, "neither root nor keel's user"},
	} {
		err := CheckOwnership([]string{dir}, tt.euid)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: got %v, want an error with %q", tt.name, err, tt.want)
		}
	}
	must(os.Chmod(f, 0o664))
	if err := CheckOwnership([]string{dir}, user); err == nil || !strings.Contains(err.Error(), "writable by group or others") {
		t.Errorf("a group-writable file of keel's user accepted: %v", err)
	}
}
