package bootwatch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/keel-storage/keel/probes/hostio"
)

// fakeWaker is a Waker whose wake-ups the test sends; Add fails for the
// paths in fail.
type fakeWaker struct {
	c     chan struct{}
	fail  map[string]bool
	mu    sync.Mutex
	added []string
}

func newFakeWaker(fail ...string) *fakeWaker {
	f := &fakeWaker{c: make(chan struct{}, 1), fail: map[string]bool{}}
	for _, p := range fail {
		f.fail[p] = true
	}
	return f
}

func (f *fakeWaker) Add(name string) error {
	if f.fail[name] {
		return errors.New("no watch here")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.added = append(f.added, name)
	return nil
}

func (f *fakeWaker) C() <-chan struct{} { return f.c }

func (f *fakeWaker) wake() {
	select {
	case f.c <- struct{}{}:
	default:
	}
}

// With a Waker the wait ends when woken, not on the next tick; a change
// nothing reports is seen within lvmActivationFallback; where a watch
// cannot be added, or a vgchange runs outside the units watched, it looks
// every lvmActivationTick as without a Waker. The clock is synctest's; no
// change falls on a look's instant, where their order would be the
// scheduler's.
func TestWaitForLVMWakes(t *testing.T) {
	const events = "/sys/fs/cgroup/system.slice/lvm-activate-vdovg.service/cgroup.events"
	for _, tc := range []struct {
		name   string
		waker  bool     // a Waker is set
		fail   []string // paths the Waker cannot watch
		unit   bool     // vgchange runs in lvm-activate-vdovg.service
		woken  bool     // the waker is woken when vgchange exits
		exitAt time.Duration
		want   time.Duration
		added  []string
	}{
		{name: "woken", waker: true, unit: true, woken: true, exitAt: 510 * time.Millisecond,
			want: 510 * time.Millisecond, added: []string{"/sys/fs/cgroup/system.slice", "/run/udev", events}},
		{name: "not woken: the fallback look", waker: true, unit: true, exitAt: 300 * time.Millisecond,
			want: 525 * time.Millisecond},
		{name: "no watch on the unit: a look each tick", waker: true, fail: []string{events}, unit: true, exitAt: 310 * time.Millisecond,
			want: 325 * time.Millisecond},
		{name: "no watch on the slice: a look each tick", waker: true, fail: []string{"/sys/fs/cgroup/system.slice"}, unit: true, woken: true,
			exitAt: 310 * time.Millisecond, want: 325 * time.Millisecond},
		{name: "vgchange outside a unit: a look each tick", waker: true, exitAt: 310 * time.Millisecond,
			want: 325 * time.Millisecond},
		{name: "no waker", unit: true, exitAt: 310 * time.Millisecond, want: 325 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				dir, root := t.TempDir(), t.TempDir()
				if err := os.WriteFile(filepath.Join(dir, "d.cue"), []byte("volumeGroups: vdovg: pvs: [\"/dev/sdb\"]\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				write := func(name, content string) {
					p := filepath.Join(root, name)
					if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				unit := "sys/fs/cgroup/system.slice/lvm-activate-vdovg.service/"
				write("sys/fs/cgroup/system.slice/cgroup.procs", "")
				write("proc/304/cmdline", "/usr/sbin/lvm\x00vgchange\x00-aay\x00--autoactivation\x00event\x00vdovg\x00")
				if tc.unit {
					write(unit+"cgroup.procs", "304\n")
					write(unit+"cgroup.events", "populated 1\nfrozen 0\n")
				}
				w := watchOn(t, dir, hostio.Source{Runner: failingRunner{}, FS: hostio.DirFS(root)})
				// The Waker's channel is made in the bubble, so that a
				// wait on it is durably blocking.
				waker := newFakeWaker(tc.fail...)
				if tc.waker {
					w.Wake = waker
				}
				go func() {
					time.Sleep(tc.exitAt)
					os.RemoveAll(filepath.Join(root, "proc/304"))
					if tc.unit {
						write(unit+"cgroup.procs", "")
						write(unit+"cgroup.events", "populated 0\nfrozen 0\n")
					}
					if tc.woken {
						waker.wake()
					}
				}()
				start := time.Now()
				w.WaitForLVM(context.Background(), start.Add(time.Minute), nil, nil)
				if took := time.Since(start); took != tc.want {
					t.Errorf("vgchange exited at %v: waited %v, want %v", tc.exitAt, took, tc.want)
				}
				if tc.added != nil && !slices.Equal(waker.added, tc.added) {
					t.Errorf("watched %q, want %q", waker.added, tc.added)
				}
			})
		})
	}
}

// LiveWaker watches a directory of this machine and gives no Waker (the
// timer) for a host that is not one; a nil *hostio.Changes never hides in
// a non-nil interface.
func TestLiveWaker(t *testing.T) {
	w, stop := LiveWaker(hostio.Source{FS: hostio.DirFS(t.TempDir())}, hclog.NewNullLogger())
	if w == nil {
		t.Error("a directory of this machine: no Waker")
	}
	stop()
	w, stop = LiveWaker(hostio.Source{FS: notDirFS{}}, hclog.NewNullLogger())
	defer stop()
	if w != nil {
		t.Errorf("a host that is not a directory: Waker %v, want nil", w)
	}
}

// notDirFS stands for a recorded or replayed host's files.
type notDirFS struct{ hostio.FS }
