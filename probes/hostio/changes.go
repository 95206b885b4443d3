package hostio

import (
	"errors"
	"fmt"

	"github.com/fsnotify/fsnotify"
)

// Changes tells a reader when a file or directory it watches under a
// DirFS root changes, through inotify (fsnotify): an entry made or removed
// in a watched directory, a write to a watched file. It reads nothing
// itself; the reader reads the host again when woken.
//
// cgroup v2 makes a file-modified event of each change of a cgroup's
// cgroup.events ("populated" going 1 or 0; the kernel's
// Documentation/admin-guide/cgroup-v2.rst), which is how systemd itself
// learns that a unit's cgroup has emptied (src/core/cgroup.c,
// unit_watch_cgroup). A cgroup made or removed is a mkdir or rmdir in its
// parent, which inotify reports to a watch on that directory.
type Changes struct {
	root DirFS
	w    *fsnotify.Watcher
	c    chan struct{}
	done chan struct{}
}

// ErrNotWatchable is returned by NewChanges for an FS that is not a
// directory of this machine (a recorded or replayed host): the reader
// looks on a timer instead.
var ErrNotWatchable = errors.New("not a directory of this machine: nothing to watch")

// NewChanges watches files under fsys, which must be a DirFS. Close ends
// it.
func NewChanges(fsys FS) (*Changes, error) {
	root, ok := fsys.(DirFS)
	if !ok {
		return nil, ErrNotWatchable
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch changes under %s: %w", string(root), err)
	}
	c := &Changes{root: root, w: w, c: make(chan struct{}, 1), done: make(chan struct{})}
	go c.forward()
	return c, nil
}

// forward folds every event, and every error (a queue overflow loses
// events, so the reader must look), into one pending wake-up.
func (c *Changes) forward() {
	defer close(c.done)
	for {
		select {
		case _, ok := <-c.w.Events:
			if !ok {
				return
			}
		case _, ok := <-c.w.Errors:
			if !ok {
				return
			}
		}
		select {
		case c.c <- struct{}{}:
		default:
		}
	}
}

// Add watches the host path name (as FS paths are: "/run/udev"): a
// directory for entries made or removed in it, a file for writes to it.
// Watching a path twice is one watch; a removed path's watch ends with it.
func (c *Changes) Add(name string) error {
	if err := c.w.Add(c.root.path(name)); err != nil {
		return fmt.Errorf("watch %s: %w", name, err)
	}
	return nil
}

// C receives after a watched path changed. Changes that come while
// nobody receives fold into one.
func (c *Changes) C() <-chan struct{} { return c.c }

// Close ends the watches.
func (c *Changes) Close() error {
	err := c.w.Close()
	<-c.done
	return err
}
