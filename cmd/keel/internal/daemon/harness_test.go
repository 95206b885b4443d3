package daemon

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/keel-storage/keel/cmd/keel/internal/watch"
	"github.com/keel-storage/keel/internal/notify"
	"github.com/keel-storage/keel/reconcile/converge"
)

// The daemon's tests run in a synctest bubble: time is the bubble's fake
// clock, which advances only when every goroutine of the test waits, so a
// debounce, a slow PV or a resync takes no real time and a loaded machine
// cannot stretch one. Nothing in the bubble may wait on real I/O (it would
// hold the clock): sd_notify goes to a channel (notes) and file watches
// are told of each write by the test (fakeWatches) instead of inotify.

// notes returns a notify.Sender that keeps the daemon's messages, and the
// function that returns the next one, failing the test when none comes
// within 10 s of the bubble's time.
func notes(t testing.TB) (notify.Sender, func() []byte) {
	c := make(chan string, 4096)
	s := notify.Sender{Send: func(m string) error { c <- m; return nil }}
	return s, func() []byte {
		t.Helper()
		select {
		case m := <-c:
			return []byte(m)
		case <-time.After(10 * time.Second):
			t.Fatal("no notification within 10 s")
			return nil
		}
	}
}

// fakeWatches stands in for inotify: write writes a file and tells the
// watches of its directory, and each watch compares the content once its
// debounce passed without a further event, as watch.Watch does.
type fakeWatches struct {
	mu   sync.Mutex
	subs map[string][]chan struct{}
}

func newFakeWatches() *fakeWatches { return &fakeWatches{subs: map[string][]chan struct{}{}} }

// watch is the daemon's WatchFunc.
func (f *fakeWatches) watch(ctx context.Context, dir string, match func(string) bool, o watch.Options, onChange func(watch.Sum), onErr func(error)) error {
	events := make(chan struct{}, 1)
	f.mu.Lock()
	f.subs[filepath.Clean(dir)] = append(f.subs[filepath.Clean(dir)], events)
	f.mu.Unlock()
	last, err := watch.Hash(dir, match)
	if err != nil {
		onErr(err)
	}
	if o.Started != nil {
		o.Started()
	}
	quiet := time.NewTimer(time.Hour)
	quiet.Stop()
	defer quiet.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-events:
			quiet.Reset(o.Debounce)
		case <-quiet.C:
			s, err := watch.Hash(dir, match)
			if err != nil {
				onErr(err)
				continue
			}
			if s != last {
				last = s
				onChange(s)
			}
		}
	}
}

// write writes data to path and tells the watches of its directory.
func (f *fakeWatches) write(t testing.TB, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Error(err)
		return
	}
	f.mu.Lock()
	subs := f.subs[filepath.Dir(path)]
	f.mu.Unlock()
	for _, c := range subs {
		select {
		case c <- struct{}{}:
		default: // an event is pending already
		}
	}
}

// wire sends d's notifications to notes and its watches to fake ones, and
// makes its loop by converge.New with d's wipe observer. It returns the
// function that returns d's next notification, and the watches.
func wire(t testing.TB, d *Daemon, configs []string, w converge.Wiring) (func() []byte, *fakeWatches) {
	sender, recv := notes(t)
	fw := newFakeWatches()
	d.Notify, d.Watch = sender, fw.watch
	w.Wipes = d.WipeObserver()
	d.Loop = converge.New(configs, w)
	return recv, fw
}
