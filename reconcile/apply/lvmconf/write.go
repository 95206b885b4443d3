package lvmconf

import (
	"context"
	"fmt"
	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/reconcile/atomicfile"
	"github.com/keel-storage/keel/reconcile/plan"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// DefaultPath is where LVM reads its configuration.
const DefaultPath = "/etc/lvm/lvm.conf"

// BackupSuffix is appended to the file's name for the copy keel keeps of
// the last version it replaced. It differs from Proxmox VE's ".bak" so
// neither tool overwrites the other's backup.
const BackupSuffix = ".keel.bak"

// Writer applies lvm.conf changes to one file.
type Writer struct {
	// Path is the file (DefaultPath on a host).
	Path string
	// Runner runs lvmconfig --validate on the candidate.
	Runner hostio.Runner
	// Log receives one line per rewrite; nil logs nothing.
	Log hclog.Logger
}

// Apply asserts ch in the file. It does nothing when the file already
// holds every value. Otherwise the candidate is validated, the current
// file is backed up and the candidate replaces it atomically. A filter
// keel cannot parse is a *FilterError and nothing is written.
func (w *Writer) Apply(ctx context.Context, ch plan.LVMConfChange) error {
	st, err := os.Stat(w.Path)
	if err != nil {
		return fmt.Errorf("lvm.conf %s: %w", w.Path, err)
	}
	src, err := os.ReadFile(w.Path)
	if err != nil {
		return fmt.Errorf("lvm.conf %s: %w", w.Path, err)
	}
	out, changed, err := Edit(src, ch)
	if err != nil {
		return fmt.Errorf("lvm.conf %s: %w", w.Path, err)
	}
	if !changed {
		return nil
	}
	if err := w.validate(ctx, out); err != nil {
		return fmt.Errorf("lvm.conf %s: candidate rejected, file left alone: %w", w.Path, err)
	}
	if err := atomicfile.Write(w.Path+BackupSuffix, src, st.Mode().Perm()); err != nil {
		return fmt.Errorf("lvm.conf %s: backup: %w", w.Path, err)
	}
	if err := atomicfile.Write(w.Path, out, st.Mode().Perm()); err != nil {
		return fmt.Errorf("lvm.conf %s: %w", w.Path, err)
	}
	if w.Log != nil {
		w.Log.Info("lvm.conf rewritten", "path", w.Path, "backup", w.Path+BackupSuffix)
	}
	return nil
}

// validate runs lvmconfig --validate with LVM_SYSTEM_DIR pointing at a
// temporary directory holding the candidate (and a copy of lvmlocal.conf,
// when the real directory has one, so the check sees the same cascade).
func (w *Writer) validate(ctx context.Context, candidate []byte) error {
	dir, err := os.MkdirTemp("", "keel-lvmconf-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "lvm.conf"), candidate, 0o600); err != nil {
		return err
	}
	if local, err := os.ReadFile(filepath.Join(filepath.Dir(w.Path), "lvmlocal.conf")); err == nil {
		if err := os.WriteFile(filepath.Join(dir, "lvmlocal.conf"), local, 0o600); err != nil {
			return err
		}
	}
	c := ValidateCmd(dir)
	res, err := w.Runner.Run(ctx, c)
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		msg := strings.TrimSpace(string(res.Stderr) + "\n" + string(res.Stdout))
		return fmt.Errorf("lvmconfig --validate: exit status %d: %s", res.ExitCode, strings.Join(strings.Fields(msg), " "))
	}
	return nil
}

// ValidateCmd is the argv that validates the lvm.conf in dir:
// env LVM_SYSTEM_DIR=dir lvmconfig --validate (no shell involved).
func ValidateCmd(dir string) hostio.Cmd {
	return hostio.Cmd{Name: "env", Args: []string{"LVM_SYSTEM_DIR=" + dir, "lvmconfig", "--validate"}}
}
