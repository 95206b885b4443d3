// Package desiredfiles reads the desired state's files as bytes: which
// paths, which files in a directory, and whether keel may take them (their
// owner and mode). It holds no CUE, so that a program that only needs the
// files' bytes (keel-boot, which looks them up in the desired-state cache)
// does not link the CUE evaluator.
package desiredfiles

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// DefaultPath is where keel reads its desired state when no path is given.
const DefaultPath = "/etc/keel"

// Paths returns the desired-state paths to read: paths, or DefaultPath
// when there are none. Every command and the daemon use this one rule.
func Paths(paths []string) []string {
	if len(paths) == 0 {
		return []string{DefaultPath}
	}
	return paths
}

// File is one desired-state file's name and content.
type File struct {
	Name string
	Data []byte
}

// Read reads the desired-state files in paths: each path is a file, or
// a directory whose *.cue files (not hidden ones) are read in name order. No
// path means DefaultPath.
func Read(paths ...string) ([]File, error) {
	var files []File
	for _, p := range Paths(paths) {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("desired state %s: %w", p, err)
		}
		names := []string{p}
		if st.IsDir() {
			ents, err := os.ReadDir(p)
			if err != nil {
				return nil, fmt.Errorf("desired state %s: %w", p, err)
			}
			names = names[:0]
			for _, e := range ents {
				n := e.Name()
				if strings.HasPrefix(n, ".") || !strings.HasSuffix(n, ".cue") || e.IsDir() {
					continue
				}
				names = append(names, filepath.Join(p, n))
			}
			if len(names) == 0 {
				return nil, fmt.Errorf("desired state %s: no .cue files in directory: %w", p, fs.ErrNotExist)
			}
		}
		for _, n := range names {
			b, err := os.ReadFile(n)
			if err != nil {
				return nil, fmt.Errorf("desired state %s: %w", n, err)
			}
			files = append(files, File{Name: n, Data: b})
		}
	}
	return files, nil
}

// CheckOwnership refuses desired-state files (and their directories) owned
// by anyone but root or the user keel runs as, or writable by anyone but
// their owner: whoever can write them can make keel run storage commands
// with its rights. euid is the user keel runs as (os.Geteuid). Run as root, keel takes root's files only; run as a
// user (a read-only --node run), also that user's own.
func CheckOwnership(paths []string, euid int) error {
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("desired state %s: %w", p, err)
		}
		check := []string{p}
		if st.IsDir() {
			m, _ := filepath.Glob(filepath.Join(p, "*.cue"))
			check = append(check, m...)
		}
		for _, f := range check {
			fi, err := os.Stat(f)
			if err != nil {
				return fmt.Errorf("desired state %s: %w", f, err)
			}
			if sys, ok := fi.Sys().(*syscall.Stat_t); ok && sys.Uid != 0 && int(sys.Uid) != euid {
				if euid == 0 {
					return fmt.Errorf("desired state %s: owned by uid %d, not root; refusing it", f, sys.Uid)
				}
				return fmt.Errorf("desired state %s: owned by uid %d, neither root nor keel's user (uid %d); refusing it", f, sys.Uid, euid)
			}
			if fi.Mode().Perm()&0o022 != 0 {
				return fmt.Errorf("desired state %s: mode %v is writable by group or others; refusing it", f, fi.Mode().Perm())
			}
		}
	}
	return nil
}
