package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// selinuxXattr is the extended attribute holding a file's SELinux label
// (security.selinux, the name the kernel's LSM reads; attr(5)).
const selinuxXattr = "security.selinux"

// Replace writes data over an existing file the way an editor that cares
// for the file does: a symbolic link is followed and its target replaced
// (the link stays a link, as config management keeps it), and the new file
// gets the old one's owner, group, mode and SELinux label before it is
// renamed into place, so a reader never sees it with other permissions.
// It returns the path it wrote (the link's target).
func Replace(path string, data []byte) (string, error) {
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	st, err := os.Stat(target)
	if err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	var label []byte
	buf := make([]byte, 256)
	if n, err := syscall.Getxattr(target, selinuxXattr, buf); err == nil {
		label = buf[:n]
	} else if !errors.Is(err, syscall.ENODATA) && !errors.Is(err, syscall.ENOTSUP) {
		return "", fmt.Errorf("write %s: read %s of %s: %w", path, selinuxXattr, target, err)
	}
	keep := func(f *os.File) error {
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			if err := f.Chown(int(sys.Uid), int(sys.Gid)); err != nil {
				return err
			}
		}
		// Chmod after Chown: chown(2) clears set-user-ID and set-group-ID.
		if err := f.Chmod(st.Mode() & (os.ModePerm | os.ModeSetuid | os.ModeSetgid | os.ModeSticky)); err != nil {
			return err
		}
		if label != nil {
			if err := syscall.Setxattr(f.Name(), selinuxXattr, label, 0); err != nil {
				return fmt.Errorf("set %s: %w", selinuxXattr, err)
			}
		}
		return nil
	}
	if err := write(target, data, keep); err != nil {
		return target, fmt.Errorf("write %s: %w", path, err)
	}
	return target, nil
}
