// Package watch notices when the content of a set of files in one
// directory changes, whatever way it was written: in place, by a temporary
// file renamed over it, by an editor's backup-and-rename dance, or by a
// Kubernetes-style symlink swap.
//
// It watches the directory, not the files (a watch on a file is lost when
// the file is renamed over), treats every event in the directory as a hint,
// debounces bursts, and then compares a hash of the content of every
// matching file: chmod, touch and temporary-file noise change nothing. A
// periodic resync and fsnotify's overflow error force a check, so lost
// events are caught up.
package watch

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Sum is the content hash of a file set.
type Sum [sha256.Size]byte

// Hash returns the hash of the names and contents of the files in dir
// that match. Files that vanish while being read are skipped (they may be
// mid-replace); a directory that cannot be read is an error.
func Hash(dir string, match func(name string) bool) (Sum, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return Sum{}, err
	}
	var names []string
	for _, e := range ents {
		if match(e.Name()) {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n)) // follows symlinks
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return Sum{}, err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(b))
		h.Write(b)
	}
	var s Sum
	copy(s[:], h.Sum(nil))
	return s, nil
}

// CueFiles matches the desired-state files of a configuration directory.
func CueFiles(name string) bool { return filepath.Ext(name) == ".cue" && name[0] != '.' }

// Named matches one file name.
func Named(base string) func(string) bool {
	return func(name string) bool { return name == base }
}

// rewatchEvery is how often a watch whose directory went away tries to
// watch the path again.
const rewatchEvery = time.Second

// Options tune a watch.
type Options struct {
	// Debounce is how long the directory must be quiet before the content
	// is compared (default 200ms).
	Debounce time.Duration
	// Resync forces a comparison this often even without events; zero
	// disables it.
	Resync time.Duration
	// Started, when set, is called once the directory is watched and the
	// first hash taken: every change after that call is reported.
	Started func()
}

// Watch calls onChange whenever the hash of the matching files in dir
// differs from the previous one (the first hash is taken when Watch starts
// and is not reported). onErr receives watcher errors. Watch returns when
// ctx ends (with ctx's error) or the watcher cannot run.
func Watch(ctx context.Context, dir string, match func(string) bool, o Options, onChange func(Sum), onErr func(error)) error {
	if o.Debounce <= 0 {
		o.Debounce = 200 * time.Millisecond
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch %s: %w", dir, err)
	}
	defer w.Close()
	if err := w.Add(dir); err != nil {
		return fmt.Errorf("watch %s: %w", dir, err)
	}
	last, err := Hash(dir, match)
	if err != nil {
		onErr(fmt.Errorf("watch %s: %w", dir, err))
	}
	if o.Started != nil {
		o.Started()
	}
	// A watch follows the directory's inode: when the directory is removed
	// or renamed away (rm -rf and mkdir, a configuration tool swapping in a
	// new directory), inotify drops the watch (IN_IGNORED) or keeps watching
	// the old inode. The path is then watched again as soon as it exists,
	// tried every rewatchEvery meanwhile.
	watching := true
	rewatch := time.NewTicker(rewatchEvery)
	rewatch.Stop()
	defer rewatch.Stop()
	lost := func() {
		if watching {
			watching = false
			w.Remove(dir) // the old inode, if it was renamed away; an error means it is gone already
			rewatch.Reset(rewatchEvery)
		}
	}
	check := func() {
		if !watching {
			if err := w.Add(dir); err != nil {
				return // not back yet
			}
			watching = true
			rewatch.Stop()
		}
		s, err := Hash(dir, match)
		if err != nil {
			onErr(fmt.Errorf("watch %s: %w", dir, err))
			return
		}
		if s != last {
			last = s
			onChange(s)
		}
	}
	debounce := time.NewTimer(time.Hour)
	debounce.Stop()
	defer debounce.Stop()
	var resync <-chan time.Time
	if o.Resync > 0 {
		t := time.NewTicker(o.Resync)
		defer t.Stop()
		resync = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, ok := <-w.Events:
			if !ok {
				return fmt.Errorf("watch %s: watcher closed", dir)
			}
			if filepath.Clean(ev.Name) == filepath.Clean(dir) && ev.Op&(fsnotify.Remove|fsnotify.Rename) != 0 {
				lost()
			}
			debounce.Reset(o.Debounce)
		case err, ok := <-w.Errors:
			if !ok {
				return fmt.Errorf("watch %s: watcher closed", dir)
			}
			onErr(fmt.Errorf("watch %s: %w", dir, err)) // overflow included: check now
			check()
		case <-debounce.C:
			check()
		case <-resync:
			check()
		case <-rewatch.C:
			check()
		}
	}
}
