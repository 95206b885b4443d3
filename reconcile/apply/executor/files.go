package executor

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/keel-storage/keel/reconcile/atomicfile"
	"github.com/keel-storage/keel/reconcile/plan"
)

// DirFiles returns a FileApplier that writes each file under root ("/" on
// a live host): the parent directory is created if needed, the file is
// replaced atomically (temporary file, fsync, rename, directory fsync) and
// a file whose content already matches is left alone.
func DirFiles(root string) FileApplier {
	return func(ctx context.Context, files []plan.FileWrite) error {
		for _, f := range files {
			if err := ctx.Err(); err != nil {
				return err
			}
			dst := filepath.Join(root, f.Path)
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
