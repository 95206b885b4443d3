package executor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/reconcile/atomicfile"
	"github.com/keel-storage/keel/reconcile/plan"
)

// DirFiles returns a FileApplier that writes each file under root ("/" on
// a live host): the parent directory is created if needed, the file is
// replaced atomically (temporary file, fsync, rename, directory fsync) and
// a file whose content already matches is left alone. A FileWrite with
// Remove removes its file, which must be an LVM profile of keel's name
// (removeKeelFile).
func DirFiles(root string) FileApplier {
	return func(ctx context.Context, files []plan.FileWrite) error {
		for _, f := range files {
			if err := ctx.Err(); err != nil {
				return err
			}
			dst := filepath.Join(root, f.Path)
			if f.Remove {
				if err := removeKeelFile(dst, f.Path); err != nil {
					return err
				}
				continue
			}
			if old, err := os.ReadFile(dst); err == nil && string(old) == f.Content {
				continue
			}
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return fmt.Errorf("file %s: %w", f.Path, err)
			}
			mode := fs.FileMode(f.Mode).Perm()
			if mode == 0 {
				mode = 0o644
			}
			if err := atomicfile.Write(dst, []byte(f.Content), mode); err != nil {
				return fmt.Errorf("file %s: %w", f.Path, err)
			}
		}
		return nil
	}
}

// removeKeelFile removes dst, the file at path on the host, and syncs its
// directory. Only an LVM profile keel names (model.KeelProfilePrefix in
// model.LVMProfileDir) is ever removed: a planner bug must not reach an
// operator's file. A file already gone is no error.
func removeKeelFile(dst, path string) error {
	base := filepath.Base(path)
	if filepath.Dir(path) != model.LVMProfileDir || !strings.HasPrefix(base, model.KeelProfilePrefix) || !strings.HasSuffix(base, ".profile") {
		return fmt.Errorf("file %s: keel removes only its own LVM profiles (%s/%s*.profile)", path, model.LVMProfileDir, model.KeelProfilePrefix)
	}
	if err := os.Remove(dst); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("file %s: %w", path, err)
	}
	d, err := os.Open(filepath.Dir(dst))
	if err != nil {
		return fmt.Errorf("file %s: directory: %w", path, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("file %s: directory sync: %w", path, err)
	}
	return nil
}
