package atomicfile

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/keel-storage/keel/internal/testenv"
)

// A file kept by config management behind a symlink is replaced through
// the link, with its owner, group, mode and security.selinux label.
func TestReplaceKeepsLinkOwnerModeLabel(t *testing.T) {
	testenv.NeedRoot(t, "chown to another group and set a security.* attribute")
	dir := t.TempDir()
	target := filepath.Join(dir, "managed", "lvm.conf")
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(target, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(target, 0, 6); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(target, 0o640); err != nil {
		t.Fatal(err)
	}
	label := []byte("system_u:object_r:lvm_etc_t:s0\x00")
	if err := syscall.Setxattr(target, selinuxXattr, label, 0); err != nil {
		t.Skipf("this file system takes no %s attribute: %v", selinuxXattr, err)
	}
	link := filepath.Join(dir, "lvm.conf")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	wrote, err := Replace(link, []byte("new\n"))
	if err != nil {
		t.Fatal(err)
	}
	if wrote != target {
		t.Errorf("Replace wrote %s, want the link's target %s", wrote, target)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("%s is no longer a symlink: %v %v", link, fi.Mode(), err)
	}
	if b, _ := os.ReadFile(target); string(b) != "new\n" {
		t.Errorf("target holds %q, want the new content", b)
	}
	fi, err := os.Stat(target)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if st.Uid != 0 || st.Gid != 6 || fi.Mode().Perm() != 0o640 {
		t.Errorf("target is %d:%d %v, want 0:6 -rw-r-----", st.Uid, st.Gid, fi.Mode().Perm())
	}
	buf := make([]byte, 256)
	n, err := syscall.Getxattr(target, selinuxXattr, buf)
	if err != nil || !bytes.Equal(buf[:n], label) {
		t.Errorf("%s is %q (%v), want %q", selinuxXattr, buf[:n], err, label)
	}
}

// A file without a label gets none, and a missing file is an error naming
// it with nothing created.
func TestReplaceNoLabelNoFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("a"), 0o604); err != nil {
		t.Fatal(err)
	}
	if _, err := Replace(p, []byte("b")); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o604 {
		t.Errorf("mode %v, want -rw----r--", fi.Mode().Perm())
	}
	if _, err := syscall.Getxattr(p, selinuxXattr, make([]byte, 64)); err == nil {
		t.Errorf("%s set on a file that had none", selinuxXattr)
	}
	missing := filepath.Join(dir, "missing")
	if _, err := Replace(missing, []byte("b")); err == nil {
		t.Error("Replace of a missing file succeeded")
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("Replace of a missing file created it")
	}
}
