// Package bcache writes bcache tunables through sysfs and proves the kernel
// took them.
//
// The kernel wants plain decimals ("4M" is EINVAL on current kernels) but
// reads several attributes back in its own human form: sequential_cutoff
// 0 reads "0.0k" and 1000000 reads "976.5k"; writeback_rate is written in
// sectors per second and read in bytes per second ("1.0M" after 2048);
// cache_mode reads "writethrough [writeback] writearound none". Values out
// of range are clamped without an error: writeback_percent 70 reads 40.
// Apply therefore reads every value back and compares it semantically — by
// formatting the desired value the way the kernel does — and reports a
// clamped or ignored value as not converged.
//
// Paths are chosen by the planner from the backing device's UUID
// (/sys/block/bcacheN/bcache/… resolved by probes; /sys/fs/bcache/<cset>/…),
// never from a bcacheN name in the desired state.
package bcache

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/reconcile/plan"
)

// NotConvergedError is a value the kernel accepted but reads back as
// something else: clamped, rounded away, or ignored.
type NotConvergedError struct {
	Path  string
	Wrote string
	Read  string // as the kernel printed it
	Want  string // the read-back that would have meant success
}

func (e *NotConvergedError) Error() string {
	return fmt.Sprintf("bcache %s: wrote %s, kernel reads back %q (want %q): clamped or not applied", e.Path, e.Wrote, e.Read, e.Want)
}

// ErrBadValue is a desired value that is not a plain decimal (or, for
// cache_mode, not one of the four modes).
var ErrBadValue = errors.New("bcache tunables are written as plain decimals")

// CacheModes are the values cache_mode accepts.
var CacheModes = []string{"writethrough", "writeback", "writearound", "none"}

// SelectedMode returns the bracketed entry of a cache_mode read-back.
func SelectedMode(readBack string) (string, error) {
	for _, f := range strings.Fields(readBack) {
		if strings.HasPrefix(f, "[") && strings.HasSuffix(f, "]") {
			return strings.Trim(f, "[]"), nil
		}
	}
	return "", fmt.Errorf("cache_mode %q: no selected mode", readBack)
}

// Expected returns the read-back that means the kernel holds want for the
// attribute attr (a sysfs file name), and checks want's form.
func Expected(attr, want string) (string, error) {
	if attr == "cache_mode" {
		for _, m := range CacheModes {
			if want == m {
				return want, nil
			}
		}
		return "", fmt.Errorf("cache_mode %q: %w", want, ErrBadValue)
	}
	n, err := strconv.ParseInt(want, 10, 64)
	if err != nil || n < 0 {
		return "", fmt.Errorf("%s %q: %w", attr, want, ErrBadValue)
	}
	switch attr {
	case "sequential_cutoff":
		return model.Hprint(n), nil
	case "writeback_rate":
		return model.Hprint(n << 9), nil // sectors written, bytes read
	}
	return want, nil
}

// Matches reports whether the read-back got means the attribute holds want.
func Matches(attr, want, got string) (bool, error) {
	exp, err := Expected(attr, want)
	if err != nil {
		return false, err
	}
	got = strings.TrimSpace(got)
	if attr == "cache_mode" {
		sel, err := SelectedMode(got)
		if err != nil {
			return false, err
		}
		return sel == exp, nil
	}
	return got == exp || got == want, nil
}

// SysFS is write and read access to sysfs attributes.
type SysFS interface {
	WriteFile(name string, data []byte) error
	ReadFile(name string) ([]byte, error)
}

// DirFS is the SysFS of this host under a root directory ("/" normally).
type DirFS string

func (d DirFS) path(name string) string {
	return filepath.Join(string(d), filepath.FromSlash(path.Clean("/"+name)))
}

// WriteFile writes data to an existing attribute in one write call.
func (d DirFS) WriteFile(name string, data []byte) error {
	f, err := os.OpenFile(d.path(name), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if werr != nil {
		return werr
	}
	return cerr
}

// ReadFile reads an attribute.
func (d DirFS) ReadFile(name string) ([]byte, error) { return os.ReadFile(d.path(name)) }

// Apply writes every value, in order, and reads each back. It stops at
// the first value the kernel rejects (EINVAL) and returns a
// *NotConvergedError for the first value that does not read back as
// written; the other writes are still made, so one clamped tunable does not
// hold back the rest.
func Apply(_ context.Context, fs SysFS, writes []plan.SysfsWrite) error {
	var first error
	for _, w := range writes {
		attr := path.Base(w.Path)
		if _, err := Expected(attr, w.Value); err != nil {
			return fmt.Errorf("bcache %s: %w", w.Path, err)
		}
		if err := fs.WriteFile(w.Path, []byte(w.Value)); err != nil {
			return fmt.Errorf("bcache %s: write %s: %w", w.Path, w.Value, err)
		}
		b, err := fs.ReadFile(w.Path)
		if err != nil {
			return fmt.Errorf("bcache %s: read back: %w", w.Path, err)
		}
		ok, err := Matches(attr, w.Value, string(b))
		if err != nil {
			return fmt.Errorf("bcache %s: %w", w.Path, err)
		}
		if !ok && first == nil {
			exp, _ := Expected(attr, w.Value)
			first = &NotConvergedError{Path: w.Path, Wrote: w.Value, Read: strings.TrimSpace(string(b)), Want: exp}
		}
	}
	return first
}

// Applier returns an executor sysfs applier over fs.
func Applier(fs SysFS) func(ctx context.Context, a plan.Action) error {
	return func(ctx context.Context, a plan.Action) error {
		if err := Apply(ctx, fs, a.Writes); err != nil {
			return fmt.Errorf("action %s: %w", a.ID, err)
		}
		return nil
	}
}
