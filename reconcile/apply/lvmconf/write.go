package lvmconf

import (
	"context"
	"errors"
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

// LocalName is the file LVM reads after lvm.conf in the same directory,
// whose settings win (lvm2 lib/commands/toolcontext.c, _load_config_file).
const LocalName = "lvmlocal.conf"

// Writer applies lvm.conf changes where they take effect.
type Writer struct {
	// Path is lvm.conf (DefaultPath on a host); lvmlocal.conf is read and
	// written next to it.
	Path string
	// Runner runs lvmconfig --validate on the candidate.
	Runner hostio.Runner
	// Log receives one line per rewrite; nil logs nothing.
	Log hclog.Logger
	// DpkgDir holds dpkg's locks ("" is DefaultDpkgDir).
	DpkgDir string
}

// file is one configuration file of the cascade with its candidate.
type file struct {
	path     string
	src, out []byte
	changed  bool
}

// Apply asserts ch where each setting takes effect: in lvmlocal.conf when
// that file sets it (LVM reads it after lvm.conf, so its value wins), else
// in lvm.conf. It does nothing when the files already hold every value.
// Otherwise, unless dpkg holds its lock (ErrDpkgLocked), the candidates
// are validated together, each file changed is backed up and replaced
// atomically: through a symbolic link to its target, keeping owner, mode
// and SELinux label (atomicfile.Replace). A filter keel cannot parse is a
// *FilterError and nothing is written.
func (w *Writer) Apply(ctx context.Context, ch plan.LVMConfChange) error {
	mainCh, localCh, local, err := w.route(ch)
	if err != nil {
		return err
	}
	main := &file{path: w.Path}
	if main.src, err = os.ReadFile(w.Path); err != nil {
		return fmt.Errorf("lvm.conf %s: %w", w.Path, err)
	}
	for _, f := range []struct {
		f  *file
		ch plan.LVMConfChange
	}{{main, mainCh}, {local, localCh}} {
		if f.f == nil {
			continue
		}
		if f.f.out, f.f.changed, err = Edit(f.f.src, f.ch); err != nil {
			return fmt.Errorf("lvm.conf %s: %w", f.f.path, err)
		}
	}
	if !main.changed && (local == nil || !local.changed) {
		return nil
	}
	dir := w.DpkgDir
	if dir == "" {
		dir = DefaultDpkgDir
	}
	if held, err := dpkgLocked(dir); err != nil {
		return fmt.Errorf("lvm.conf %s: %w", w.Path, err)
	} else if held != "" {
		return fmt.Errorf("lvm.conf %s: %w (%s); nothing written, keel tries again on its next pass", w.Path, ErrDpkgLocked, held)
	}
	if err := w.validate(ctx, main, local); err != nil {
		return fmt.Errorf("lvm.conf %s: candidate rejected, file left alone: %w", w.Path, err)
	}
	for _, f := range []*file{local, main} {
		if f == nil || !f.changed {
			continue
		}
		if err := w.replace(f); err != nil {
			return err
		}
	}
	return nil
}

// route splits ch between lvm.conf and lvmlocal.conf: a setting
// lvmlocal.conf assigns goes there. local is nil when lvmlocal.conf does
// not exist.
func (w *Writer) route(ch plan.LVMConfChange) (mainCh, localCh plan.LVMConfChange, local *file, err error) {
	p := filepath.Join(filepath.Dir(w.Path), LocalName)
	src, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return ch, plan.LVMConfChange{}, nil, nil
	}
	if err != nil {
		return ch, localCh, nil, fmt.Errorf("lvm.conf %s: %w", p, err)
	}
	mainCh, localCh, err = Route(ch, src)
	if err != nil {
		return ch, localCh, nil, fmt.Errorf("lvm.conf %s: %w", p, err)
	}
	return mainCh, localCh, &file{path: p, src: src}, nil
}

// Route splits ch between lvm.conf and lvmlocal.conf, whose content is
// local: a setting lvmlocal.conf assigns goes there, where it wins.
func Route(ch plan.LVMConfChange, local []byte) (mainCh, localCh plan.LVMConfChange, err error) {
	v, err := Read(local)
	if err != nil {
		return ch, localCh, err
	}
	mainCh = ch
	if v.ScanLVs != nil {
		mainCh.ScanLVs, localCh.ScanLVs = nil, ch.ScanLVs
	}
	if v.GlobalFilter != nil {
		mainCh.GlobalFilter, localCh.GlobalFilter = nil, ch.GlobalFilter
	}
	if v.UseDevicesFile != nil {
		mainCh.UseDevicesFile, localCh.UseDevicesFile = nil, ch.UseDevicesFile
	}
	if v.RaidFaultPolicy != "" {
		mainCh.RaidFaultPolicy, localCh.RaidFaultPolicy = "", ch.RaidFaultPolicy
	}
	return mainCh, localCh, nil
}

// replace backs f up and writes its candidate in place.
func (w *Writer) replace(f *file) error {
	target, err := filepath.EvalSymlinks(f.path)
	if err != nil {
		return fmt.Errorf("lvm.conf %s: %w", f.path, err)
	}
	st, err := os.Stat(target)
	if err != nil {
		return fmt.Errorf("lvm.conf %s: %w", f.path, err)
	}
	if err := atomicfile.Write(target+BackupSuffix, f.src, st.Mode().Perm()); err != nil {
		return fmt.Errorf("lvm.conf %s: backup: %w", f.path, err)
	}
	if _, err := atomicfile.Replace(f.path, f.out); err != nil {
		return fmt.Errorf("lvm.conf %s: %w", f.path, err)
	}
	if w.Log != nil {
		w.Log.Info("lvm.conf rewritten", "path", f.path, "target", target, "backup", target+BackupSuffix)
	}
	return nil
}

// validate runs lvmconfig --validate with LVM_SYSTEM_DIR pointing at a
// temporary directory holding the candidates of lvm.conf and lvmlocal.conf
// (local nil: none), so the check sees the same cascade.
func (w *Writer) validate(ctx context.Context, main, local *file) error {
	dir, err := os.MkdirTemp("", "keel-lvmconf-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "lvm.conf"), main.out, 0o600); err != nil {
		return err
	}
	if local != nil {
		if err := os.WriteFile(filepath.Join(dir, LocalName), local.out, 0o600); err != nil {
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
