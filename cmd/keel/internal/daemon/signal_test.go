package daemon

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/keel-storage/keel/cmd/keel/internal/uevent"
	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/reconcile/converge"
)

// A flood of block uevents costs a bounded number of passes, keel sleeps
// the gap between two of them, and the last event is always followed by a
// pass that starts after it.
func TestBlockEventsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, pass := range []time.Duration{0, 150 * time.Millisecond} {
			const gap = 100 * time.Millisecond
			ctx, cancel := context.WithCancel(context.Background())
			q := make(eventQueue, 1)
			var mu sync.Mutex
			var starts, ends []time.Time
			go blockEvents(ctx, q, gap, func(string) <-chan struct{} {
				mu.Lock()
				starts = append(starts, time.Now())
				mu.Unlock()
				done := make(chan struct{})
				time.AfterFunc(pass, func() {
					mu.Lock()
					ends = append(ends, time.Now())
					mu.Unlock()
					close(done)
				})
				return done
			})
			start := time.Now()
			var last time.Time // just before the last event: a pass started later saw it
			for i := 0; i < 1000; i++ {
				last = time.Now()
				q.offer("block device change dm-1")
				time.Sleep(time.Millisecond)
			}
			flood := time.Since(start)
			time.Sleep(3*gap + 2*pass)
			cancel()
			mu.Lock()
			if max := int(flood/(gap+pass)) + 2; len(starts) > max {
				t.Errorf("pass %v: %d passes for 1000 events in %v, want at most %d", pass, len(starts), flood, max)
			}
			if len(starts) < 2 {
				t.Fatalf("pass %v: %d passes for a flood of %v", pass, len(starts), flood)
			}
			if !starts[len(starts)-1].After(last) {
				t.Errorf("pass %v: the last pass started %v before the last event", pass, last.Sub(starts[len(starts)-1]))
			}
			for i := 1; i < len(starts); i++ {
				if d := starts[i].Sub(ends[i-1]); d < gap-5*time.Millisecond {
					t.Errorf("pass %v: pass %d started %v after the end of the one before, want at least %v", pass, i, d, gap)
				}
			}
			mu.Unlock()
		}
	})
}

func TestBlockEvent(t *testing.T) {
	for _, c := range []struct {
		e    uevent.Event
		want bool
	}{
		{uevent.Event{Action: "change", Subsystem: "block"}, true},
		{uevent.Event{Action: "add", Subsystem: "block"}, true},
		{uevent.Event{Action: "remove", Subsystem: "block"}, true},
		{uevent.Event{Action: "bind", Subsystem: "block"}, false},
		{uevent.Event{Action: "change", Subsystem: "net"}, false},
	} {
		if got := blockEvent(c.e); got != c.want {
			t.Errorf("blockEvent(%+v) = %v, want %v", c.e, got, c.want)
		}
	}
}

// A bcache registration goes to the fast path, a bcache device's removal
// to the coalescer only later (so a re-registration's fast path is not held
// up by a full pass), any other block event to the coalescer at once.
func TestOnUevent(t *testing.T) {
	d := &Daemon{Log: hclog.NewNullLogger()}
	for _, c := range []struct {
		e                  uevent.Event
		fast, queued, late bool
	}{
		{e: uevent.Event{Action: "add", Subsystem: "block", Env: map[string]string{"DEVNAME": "bcache0"}}, fast: true},
		{e: uevent.Event{Action: "remove", Subsystem: "block", Env: map[string]string{"DEVNAME": "bcache0"}}, late: true},
		{e: uevent.Event{Action: "add", Subsystem: "block", Env: map[string]string{"DEVNAME": "dm-3"}}, queued: true},
		{e: uevent.Event{Action: "change", Subsystem: "block", Env: map[string]string{"DEVNAME": "nvme0n1"}}, queued: true},
		{e: uevent.Event{Action: "add", Subsystem: "net", Env: map[string]string{"DEVNAME": "eth0"}}},
	} {
		q := make(eventQueue, 1)
		var fast bool
		var late func()
		d.onUevent(c.e, func(tr trigger) bool { fast = tr.fast; return true }, q, func(f func()) { late = f })
		queued := len(q) == 1
		if fast != c.fast || queued != c.queued || (late != nil) != c.late {
			t.Errorf("%s %s: fast %v queued %v late %v, want %v %v %v", c.e.Action, c.e.Env["DEVNAME"], fast, queued, late != nil, c.fast, c.queued, c.late)
		}
		if late != nil {
			late()
			if len(q) != 1 {
				t.Errorf("%s %s: not queued after the delay", c.e.Action, c.e.Env["DEVNAME"])
			}
		}
	}
}

// fakeStamps is a StampFunc over a map the test changes.
type fakeStamps struct {
	mu sync.Mutex
	s  map[string]string
	e  map[string]error
}

func (f *fakeStamps) set(dev, s string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.s[dev], f.e[dev] = s, err
}

func (f *fakeStamps) stamp(dev string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.s[dev], f.e[dev]
}

// A PV counts as changed when its stamp is new or differs, and an
// unreadable PV counts once per distinct error, not at every poll.
func TestPollMetadata(t *testing.T) {
	d := &Daemon{Log: hclog.NewNullLogger()}
	d.pvDevs.Store([]string{"/dev/sda", "/dev/sdb"})
	f := &fakeStamps{s: map[string]string{"/dev/sda": "a1", "/dev/sdb": "b1"}, e: map[string]error{}}
	prev := map[string]string{}
	step := func() int {
		var changed []string
		prev, changed = d.restamp(prev, d.pvDevs.Load().([]string), f.stamp)
		return len(changed)
	}
	for i, c := range []struct {
		name string
		do   func()
		want int
	}{
		{"first sight of the PVs", func() {}, 2},
		{"nothing changed", func() {}, 0},
		{"a commit on sdb", func() { f.set("/dev/sdb", "b2", nil) }, 1},
		{"sdb unreadable", func() { f.set("/dev/sdb", "", errors.New("EIO")) }, 1},
		{"sdb still unreadable", func() {}, 0},
		{"sdb readable again", func() { f.set("/dev/sdb", "b2", nil) }, 1},
		{"a new PV in the last pass", func() { d.pvDevs.Store([]string{"/dev/sda", "/dev/sdb", "/dev/sdc"}) }, 1},
		{"a PV gone from the last pass", func() { d.pvDevs.Store([]string{"/dev/sda"}) }, 0},
	} {
		c.do()
		if got := step(); got != c.want {
			t.Errorf("step %d (%s): %d PVs changed, want %d", i, c.name, got, c.want)
		}
	}
}

// keel run with --resync 1h: a changed stamp of the snapshot's PV starts a
// full pass (why "lvm metadata changed"); an unchanged one does not. The
// first poll after the start pass: without Seqnos it sees the PVs for the
// first time and starts a pass; with Seqnos that agree with the start
// pass's report it takes the verified stamps as its baseline and starts
// none; with a VG committed since the report (its seqno moved on) it
// starts one.
func TestDaemonPassesOnMetadataChange(t *testing.T) {
	for _, c := range []struct {
		name      string
		seqnos    func(h *model.Host) map[string]uint64 // nil: no Seqnos
		firstSeen int                                   // passes at the first poll
	}{
		{"no seqnos", nil, 1},
		{"seqnos agree", func(h *model.Host) map[string]uint64 {
			m := map[string]uint64{}
			for name, vg := range h.VGs {
				m[name] = vg.Seqno
			}
			return m
		}, 0},
		{"a vg committed since", func(h *model.Host) map[string]uint64 {
			m := map[string]uint64{}
			for name, vg := range h.VGs {
				m[name] = vg.Seqno + 1
			}
			return m
		}, 1},
		{"a vg new since", func(h *model.Host) map[string]uint64 {
			m := map[string]uint64{"newvg": 1}
			for name, vg := range h.VGs {
				m[name] = vg.Seqno
			}
			return m
		}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { metadataChange(t, c.seqnos, c.firstSeen) })
		})
	}
}

func metadataChange(t *testing.T, seqnos func(h *model.Host) map[string]uint64, firstSeen int) {
	snap, err := hostio.ReadSnapshotFile("../../../../examples/nodes/vdo-on-bcache.txtar")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "desired.cue"), []byte("lvm: scanLVs: true\n"), 0o644)
	a := converge.New([]string{dir}, converge.Wiring{StateDir: t.TempDir(), Source: hostio.Replay(snap), DpkgDir: t.TempDir(), LVMConfPath: filepath.Join(t.TempDir(), "lvm.conf")})
	h, err := a.Probe(context.Background())
	if err != nil || len(h.PVs) == 0 || len(h.VGs) == 0 {
		t.Fatalf("the snapshot's PVs and VGs: %v (%d, %d)", err, len(h.PVs), len(h.VGs))
	}
	for name, vg := range h.VGs {
		if vg.Seqno == 0 {
			t.Fatalf("vg %s: no vg_seqno in the capture's report", name)
		}
	}
	f := &fakeStamps{s: map[string]string{}, e: map[string]error{}}
	for name := range h.PVs {
		f.set(name, "start", nil)
	}
	w := &syncWriter{b: &strings.Builder{}}
	log := func() string {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.b.String()
	}
	sender, _ := notes(t)
	d := &Daemon{Loop: a, Log: hclog.New(&hclog.LoggerOptions{Output: w, Level: hclog.Info}),
		NoUevents: true, Resync: time.Hour, Poll: 20 * time.Millisecond, Stamp: f.stamp,
		Notify: sender, Watch: newFakeWatches().watch}
	if seqnos != nil {
		d.Seqnos = func(context.Context) (map[string]uint64, error) { return seqnos(h), nil }
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	passes := func(why string) int { return strings.Count(log(), `why="`+why+`"`) }
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: log:\n%s", what, log())
			}
		}
	}
	waitFor("the start pass", func() bool { return strings.Contains(log(), "why=start") })
	if firstSeen > 0 {
		waitFor("first sight", func() bool { return passes("lvm metadata changed") >= firstSeen })
	}
	time.Sleep(200 * time.Millisecond) // ten polls, nothing changed
	if n := passes("lvm metadata changed"); n != firstSeen {
		t.Fatalf("%d passes without a change, want %d:\n%s", n, firstSeen, log())
	}
	for name := range h.PVs {
		f.set(name, "committed", nil)
	}
	waitFor("after a commit", func() bool { return passes("lvm metadata changed") == firstSeen+1 })
	cancel()
	<-done
	if !strings.Contains(log(), "lvm_digest=") {
		t.Errorf("pass done lines carry no lvm_digest:\n%s", log())
	}
}

// The pool status read at each poll tick: the first reading is the
// baseline, an unchanged key sends nothing, a changed one (a pool a
// percent fuller, read-only, unreadable) sends one trigger.
func TestPollPoolStatus(t *testing.T) {
	keys := make(chan string, 8)
	d := &Daemon{Log: hclog.NewNullLogger(), PoolKey: func(context.Context) (string, error) {
		k := <-keys
		if k == "EIO" {
			return "", errors.New("dmsetup status: EIO")
		}
		return k, nil
	}}
	tick := make(chan time.Time)
	sent := make(chan trigger, 8)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go d.pollMetadata(ctx, tick, nil, func(t trigger) { sent <- t })
	for i, c := range []struct {
		key  string
		want bool
	}{
		{"tp data 80%", false}, // baseline
		{"tp data 80%", false},
		{"tp data 81%", true},
		{"tp data 81% ro", true},
		{"EIO", true},
		{"EIO", false},
		{"tp data 81% ro", true},
	} {
		keys <- c.key
		tick <- time.Now()
		tick <- time.Now() // returns once the first reading (and its trigger) is done
		keys <- c.key      // the second reading: the same key, no trigger
		select {
		case tr := <-sent:
			if !c.want {
				t.Errorf("step %d (%s): trigger %q, want none", i, c.key, tr.why)
			} else if tr.why != "pool status changed" {
				t.Errorf("step %d (%s): trigger %q", i, c.key, tr.why)
			}
		default:
			if c.want {
				t.Errorf("step %d (%s): no trigger", i, c.key)
			}
		}
	}
}
