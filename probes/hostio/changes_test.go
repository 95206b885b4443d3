package hostio

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Changes wakes its reader for an entry made or removed in a watched
// directory and for a write to a watched file, under the DirFS root, and
// for nothing else; an FS that is not a directory of this machine cannot
// be watched.
func TestChanges(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"run/udev", "sys/unit"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	events := filepath.Join(root, "sys/unit/cgroup.events")
	if err := os.WriteFile(events, []byte("populated 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := NewChanges(DirFS(root))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, p := range []string{"/run/udev", "/sys/unit/cgroup.events"} {
		if err := c.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Add("/sys/absent"); err == nil {
		t.Error("a watch on an absent path was added")
	}
	woken := func(what string) {
		t.Helper()
		select {
		case <-c.C():
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: not woken", what)
		}
	}
	quiet := func(what string) {
		t.Helper()
		select {
		case <-c.C():
			t.Fatalf("%s: woken", what)
		case <-time.After(100 * time.Millisecond):
		}
	}
	quiet("nothing changed")
	queue := filepath.Join(root, "run/udev/queue")
	if err := os.WriteFile(queue, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	woken("a file made in a watched directory")
	time.Sleep(50 * time.Millisecond) // the write's own events, folded
	drain(c)
	if err := os.Remove(queue); err != nil {
		t.Fatal(err)
	}
	woken("a file removed from a watched directory")
	if err := os.WriteFile(events, []byte("populated 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	woken("a write to a watched file")
	time.Sleep(50 * time.Millisecond)
	drain(c)
	if err := os.WriteFile(filepath.Join(root, "sys/other"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	quiet("a file made in a directory not watched")

	if _, err := NewChanges(recordedFS{}); !errors.Is(err, ErrNotWatchable) {
		t.Errorf("an FS that is not a directory: %v, want ErrNotWatchable", err)
	}
}

// drain takes a pending wake-up, if any.
func drain(c *Changes) {
	select {
	case <-c.C():
	default:
	}
}

// recordedFS stands for an FS that is not a directory of this machine.
type recordedFS struct{ FS }
