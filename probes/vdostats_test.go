package probes

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keel-storage/keel/probes/hostio"
)

// gatedRunner holds lvm fullreport back until a VDO statistics message has
// been sent, and counts the messages.
type gatedRunner struct {
	hostio.Runner
	sent     chan struct{}
	once     sync.Once
	mu       sync.Mutex
	messages map[string]int
	fail     error
}

func (g *gatedRunner) Run(ctx context.Context, c hostio.Cmd) (hostio.Result, error) {
	switch {
	case c.Name == "lvm" && len(c.Args) > 0 && c.Args[0] == "fullreport":
		select {
		case <-g.sent:
		case <-time.After(10 * time.Second):
			return hostio.Result{}, errors.New("lvm fullreport: no VDO statistics message was sent while it ran")
		}
	case c.Name == "dmsetup" && len(c.Args) == 4 && c.Args[0] == "message":
		g.mu.Lock()
		g.messages[c.Args[1]]++
		g.mu.Unlock()
		defer g.once.Do(func() { close(g.sent) })
		if g.fail != nil {
			return hostio.Result{}, g.fail
		}
	}
	return g.Runner.Run(ctx, c)
}

func gated(t *testing.T, name string) (*gatedRunner, hostio.Source) {
	src := hostio.Replay(loadSnapshot(t, name))
	g := &gatedRunner{Runner: src.Runner, sent: make(chan struct{}), messages: map[string]int{}}
	src.Runner = g
	return g, src
}

// The statistics of a VDO pool are read while lvm fullreport runs (the
// runner holds the report back until they are), once per pool, and give the
// same host as a pass that reads them after the report.
func TestVDOStatsReadDuringFullReport(t *testing.T) {
	for _, name := range []string{"vdo-defaults", "vdo-on-bcache"} {
		g, src := gated(t, name)
		h, err := Probe(context.Background(), src)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(h.VDOPools) == 0 {
			t.Fatalf("%s: no VDO pool", name)
		}
		for lv, p := range h.VDOPools {
			if p.DMName == "" || p.Stats == nil {
				t.Errorf("%s: pool %s: dm name %q, stats %v", name, lv, p.DMName, p.Stats)
			}
			if n := g.messages[p.DMName]; n != 1 {
				t.Errorf("%s: pool %s: %d statistics messages, want 1", name, lv, n)
			}
		}
		want := probeSnapshot(t, name)
		for lv, p := range want.VDOPools {
			if got := h.VDOPools[lv]; got == nil || got.Stats == nil || !reflect.DeepEqual(got.Stats, p.Stats) {
				t.Errorf("%s: pool %s: prefetched stats differ from the replayed pass's", name, lv)
			}
		}
	}
}

// A failed prefetch is the pool's error, as a failed read after the report
// was: the pass goes on and the message is not sent a second time.
func TestVDOStatsPrefetchErrorIsThePoolsError(t *testing.T) {
	g, src := gated(t, "vdo-defaults")
	g.fail = errors.New("dmsetup message: device busy")
	h, err := Probe(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	for lv, p := range h.VDOPools {
		if p.Stats != nil || !strings.Contains(strings.Join(p.Errors, "\n"), "device busy") {
			t.Errorf("pool %s: stats %v, errors %q", lv, p.Stats, p.Errors)
		}
		if n := g.messages[p.DMName]; n != 1 {
			t.Errorf("pool %s: %d statistics messages, want 1", lv, n)
		}
	}
}

// layoutFirstFS signals on the first read of a VDO storage device.
type layoutFirstFS struct {
	hostio.FS
	once sync.Once
	read chan struct{}
}

func (f *layoutFirstFS) ReadAt(name string, off int64, n int) ([]byte, error) {
	if strings.HasPrefix(name, devMapperPrefix) && strings.HasSuffix(name, "_vdata") {
		f.once.Do(func() { close(f.read) })
	}
	return f.FS.ReadAt(name, off, n)
}

// reportAfterLayout holds lvm fullreport until the VDO layout was read.
type reportAfterLayout struct {
	hostio.Runner
	read   <-chan struct{}
	waited chan bool
}

func (r reportAfterLayout) Run(ctx context.Context, c hostio.Cmd) (hostio.Result, error) {
	if c.Name == "lvm" && len(c.Args) > 0 && c.Args[0] == "fullreport" {
		select {
		case <-r.read:
			r.waited <- true
		case <-time.After(3 * time.Second):
			r.waited <- false
		}
	}
	return r.Runner.Run(ctx, c)
}

// TestVDOLayoutReadWhileTheReportRuns replays the split VDO capture with
// lvm fullreport held until the pool's storage device is read: the pass
// reads the layout from the device named in the vdo target's table while
// the report runs, not after it, and builds the same pools.
func TestVDOLayoutReadWhileTheReportRuns(t *testing.T) {
	snap := loadSnapshot(t, "vdo-split")
	want, err := Probe(context.Background(), hostio.Replay(snap))
	if err != nil {
		t.Fatal(err)
	}
	src := hostio.Replay(snap)
	fs := &layoutFirstFS{FS: src.FS, read: make(chan struct{})}
	waited := make(chan bool, 4)
	src.FS, src.Runner = fs, reportAfterLayout{Runner: src.Runner, read: fs.read, waited: waited}
	got, err := Probe(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	if !<-waited {
		t.Error("lvm fullreport waited 3 s and no VDO layout was read: the layout is read only after the report")
	}
	for name, p := range want.VDOPools {
		g := got.VDOPools[name]
		if g == nil || !reflect.DeepEqual(g.OnDisk, p.OnDisk) || !reflect.DeepEqual(g.Regions, p.Regions) || p.OnDisk == nil {
			t.Errorf("vdo pool %s: layout %+v regions %+v, want %+v %+v", name, g.OnDisk, g.Regions, p.OnDisk, p.Regions)
		}
	}
}

// stuckLayoutFS blocks every read of a VDO storage device until release
// closes, and closes reading when the first begins.
type stuckLayoutFS struct {
	hostio.FS
	once    sync.Once
	reading chan struct{}
	release chan struct{}
}

func (f *stuckLayoutFS) ReadAt(name string, off int64, n int) ([]byte, error) {
	if strings.HasPrefix(name, devMapperPrefix) && strings.HasSuffix(name, "_vdata") {
		f.once.Do(func() { close(f.reading) })
		<-f.release
	}
	return f.FS.ReadAt(name, off, n)
}

// TestPreemptedPassLeavesTheLayoutRead ends a pass's context while the
// layout read ahead hangs on a slow device (e2e/underfire's dm-delay): the
// pass returns at once, as it does with its read-only commands, instead of
// waiting for the read.
func TestPreemptedPassLeavesTheLayoutRead(t *testing.T) {
	src := hostio.Replay(loadSnapshot(t, "vdo-split"))
	fs := &stuckLayoutFS{FS: src.FS, reading: make(chan struct{}), release: make(chan struct{})}
	defer close(fs.release)
	src.FS = fs
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan error, 1)
	go func() {
		_, err := Probe(ctx, src)
		ended <- err
	}()
	select {
	case <-fs.reading:
	case <-time.After(5 * time.Second):
		t.Fatal("no VDO layout read started")
	}
	cancel()
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("pass error %v, want context.Canceled", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the preempted pass waited for the layout read in flight")
	}
}
