package daemon

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/reconcile/apply/executor"
	"github.com/keel-storage/keel/reconcile/converge"
	"github.com/keel-storage/keel/reconcile/converge/convergetest"
	"github.com/keel-storage/keel/reconcile/plan"
	"github.com/keel-storage/keel/reconcile/state/statefile"

	"github.com/hashicorp/go-hclog"
	"github.com/keel-storage/keel/cmd/keel/internal/alerts"
)

// The daemon against a node snapshot recorded in the test guest: READY
// after the first pass, a textfile, config.invalid with the last good
// state kept, SIGHUP reload, STOPPING on cancel.
func TestDaemonLifecycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		snap, err := hostio.ReadSnapshotFile("../../../../probes/testdata/snapshots/orphan-pv.txtar")
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		cfg := filepath.Join(dir, "desired.cue")
		// scan_lvs=0 is what the snapshot's host has: nothing to do.
		os.WriteFile(cfg, []byte("lvm: scanLVs: false\n"), 0o644)
		prom := filepath.Join(t.TempDir(), "keel.prom")

		hup := make(chan os.Signal, 1)
		var logs strings.Builder
		d := &Daemon{Log: hclog.New(&hclog.LoggerOptions{Output: &syncWriter{b: &logs}, Level: hclog.Info}),
			Textfile: prom, NoUevents: true, Reload: hup, Debounce: 20 * time.Millisecond}
		recv, w := wire(t, d, []string{dir}, converge.Wiring{StateDir: t.TempDir(), Source: hostio.Replay(snap),
			DpkgDir: t.TempDir(), LVMConfPath: filepath.Join(t.TempDir(), "lvm.conf")})
		a := d.Loop
		next := func() string {
			t.Helper()
			return string(recv())
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- d.Run(ctx) }()

		if got := next(); got != "READY=1\nSTATUS=first pass running" {
			t.Fatalf("first notification %q", got)
		}
		if got := next(); !strings.HasPrefix(got, "STATUS=0 actions converged, 0 stuck") {
			t.Fatalf("first notification %q", got)
		}
		b, _ := os.ReadFile(prom)
		if !strings.Contains(string(b), "keel_config_last_reload_successful 1") || !strings.Contains(string(b), "keel_reconcile_errors_total 0") {
			t.Fatalf("textfile:\n%s", b)
		}

		// An invalid desired state: reported, last good kept.
		w.write(t, cfg, "lvm: scanLVs: 7\n")
		if got := next(); !strings.Contains(got, "1 error") {
			t.Fatalf("after invalid config: %q", got)
		}
		if a.Desired() == nil || *a.Desired().LVM.ScanLVs {
			t.Fatal("last good desired state not kept")
		}
		b, _ = os.ReadFile(prom)
		if !strings.Contains(string(b), "keel_config_last_reload_successful 0") || !strings.Contains(string(b), `keel_finding_active{id="config.invalid"`) {
			t.Fatalf("textfile:\n%s", b)
		}

		// Fixed, then SIGHUP: RELOADING, then READY with the finding cleared.
		w.write(t, cfg, "lvm: scanLVs: false\n")
		if got := next(); !strings.Contains(got, "0 error") {
			t.Fatalf("after fix: %q", got)
		}
		hup <- os.Interrupt
		if got := next(); !strings.HasPrefix(got, "RELOADING=1\nMONOTONIC_USEC=") {
			t.Fatalf("reload: %q", got)
		}
		if got := next(); !strings.HasPrefix(got, "READY=1") {
			t.Fatalf("after reload: %q", got)
		}
		if got := next(); !strings.Contains(got, "0 error") {
			t.Fatalf("after the reload's pass: %q", got)
		}
		cancel()
		if got := next(); got != "STOPPING=1" {
			t.Fatalf("stop: %q", got)
		}
		<-done
		l := logs.String()
		for _, want := range []string{"config.invalid", "finding raised: finding=config.invalid", "finding cleared: finding=config.invalid"} {
			if !strings.Contains(l, want) {
				t.Errorf("log lacks %q:\n%s", want, l)
			}
		}
	})
}

// syncWriter serializes writes from the daemon's goroutines.
type syncWriter struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func TestKeepFindingsOnFailedPass(t *testing.T) {
	prev := []plan.Finding{{ID: "reconcile.stuck", Object: "bcache:x"}, {ID: plan.ConfigInvalid, Object: "/etc/keel"}}
	got := keepFindings(prev, nil)
	if len(got) != 1 || got[0].ID != "reconcile.stuck" {
		t.Fatalf("%+v", got)
	}
	got = keepFindings(prev[:1], []plan.Finding{{ID: plan.ConfigInvalid, Object: "/etc/keel"}})
	if len(got) != 2 {
		t.Fatalf("%+v", got)
	}
}

// While a safe removal runs the textfile is rewritten on a timer; once it
// ends (and before any starts) nothing is written: no idle wake-up.
func TestPublishWipesOnlyWhileWiping(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &Daemon{Log: hclog.NewNullLogger(), metrics: alerts.NewMetrics()}
		path := filepath.Join(t.TempDir(), "keel.prom")
		d.wipeTextfile.Store(path)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		started := make(chan struct{}, 1)
		go d.publishWipes(ctx, started, 10*time.Millisecond)
		time.Sleep(50 * time.Millisecond)
		if _, err := os.Stat(path); err == nil {
			t.Fatal("textfile written before any removal started")
		}
		d.metrics.WipeStarted("vg", "lv", func() (uint64, uint64, float64) { return 5, 10, 1 })
		started <- struct{}{}
		deadline := time.Now().Add(5 * time.Second)
		for {
			b, _ := os.ReadFile(path)
			if strings.Contains(string(b), "keel_wipe") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no wipe progress in the textfile:\n%s", b)
			}
			time.Sleep(5 * time.Millisecond)
		}
		d.metrics.WipeFinished("vg", "lv")
		time.Sleep(30 * time.Millisecond) // the loop notices the end
		os.Remove(path)
		time.Sleep(50 * time.Millisecond)
		if _, err := os.Stat(path); err == nil {
			t.Fatal("textfile rewritten after the removal ended")
		}
	})
}

// The daemon serves a change of bcache tunables only by the fast path
// before its full pass, and any other change by a full pass alone.
func TestDaemonBcacheOnlyChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg, sys, run, d, recv, logs, w := bcacheDaemon(t)
		run.Delay = 100 * time.Millisecond
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- d.Run(ctx) }()
		if got := string(recv()); got != "READY=1\nSTATUS=first pass running" {
			t.Fatalf("first notification %q", got)
		}
		if got := string(recv()); !strings.HasPrefix(got, "STATUS=1 actions converged") {
			t.Fatalf("first notification %q", got)
		}
		w.write(t, cfg, bcacheCue(30))
		if got := string(recv()); !strings.HasPrefix(got, "STATUS=0 actions converged") {
			t.Fatalf("after the bcache change: %q", got) // the fast path converged it; the pass found nothing
		}
		w.write(t, cfg, bcacheCue(30)+"lvm: scanLVs: false\n")
		if got := string(recv()); !strings.HasPrefix(got, "STATUS=") {
			t.Fatalf("after the lvm change: %q", got)
		}
		cancel()
		recv() // STOPPING=1
		<-done
		writes := sys.WriteLog()
		if writes != "/sys/block/bcache0/bcache/writeback_percent=40 /sys/block/bcache0/bcache/writeback_percent=30" {
			t.Fatalf("writes %q", writes)
		}
		l := logs.String()
		if n := strings.Count(l, "bcache fast path: why=\"desired state changed\" converged=1"); n != 1 {
			t.Errorf("%d fast paths for the bcache change, want 1:\n%s", n, l)
		}
		if n := strings.Count(l, "bcache fast path"); n != 1 {
			t.Errorf("the lvm change took the fast path:\n%s", l)
		}
		// Its plan used the sysfs read made while the desired state loaded:
		// only the verification read sysfs again.
		if n := strings.Count(l, "bcache sysfs probe and plan"); n != 1 {
			t.Errorf("%d sysfs reads in the fast path, want 1 (the verification):\n%s", n, l)
		}
		if strings.Contains(l, "context canceled") {
			t.Errorf("a probe was started for the bcache change and cancelled:\n%s", l)
		}
		if !strings.Contains(l, "the change touches bcache devices only") {
			t.Errorf("log:\n%s", l)
		}
	})
}

// A bcache change made while a pass reads a slow PV is applied at once:
// the pass, which has changed nothing yet, is preempted, the change takes
// the fast path, and the full pass runs again after it (with the slow PV,
// to its end: one preemption in a row). The change must not wait for the
// slow pass to end: a pass over a PV whose every I/O is slow takes as long
// as all its reads (e2e/underfire; docs/reliability.md).
func TestDaemonBcacheChangeDuringSlowPass(t *testing.T) {
	t.Run("pass", func(t *testing.T) { synctest.Test(t, func(t *testing.T) { bcacheChangeDuringSlowPass(t, false) }) })
	// The SIGHUP's serve itself takes the fast path (a bcache change read
	// with it) before its slow full pass: the gate shuts while the fast
	// path applies and opens again after it (e2e/underfire: shut from the
	// fast path on, the change waited 2m45s).
	t.Run("after a fast path", func(t *testing.T) { synctest.Test(t, func(t *testing.T) { bcacheChangeDuringSlowPass(t, true) }) })
}

// A bcache-only change that a SIGHUP's reload reads, and whose own file
// event then preempts that serve before its fast path wrote anything: the
// serve that follows reads the same desired state again (no change since
// the last load), yet still owes the fast path: otherwise the change waits
// for the full pass over the slow PV (e2e/underfire; docs/reliability.md).
func TestDaemonFastPathOwedAfterPreemption(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := runBcacheDaemon(t)
		cfg, sys, recv, logs, hup := b.cfg, b.sys, b.recv, b.logs, b.hup
		const slow = 4 * time.Second
		b.run.SlowLVM.Store(int64(slow))
		// The fast path's first sysfs read waits until the file's own event
		// (100 ms of debounce) has preempted the serve.
		release := sys.HoldNextRead()
		defer release()
		changed := time.Now()
		b.w.write(t, cfg, bcacheCue(30))
		hup <- os.Interrupt
		time.AfterFunc(600*time.Millisecond, release)
		deadline := time.Now().Add(15 * time.Second)
		for !strings.HasSuffix(sys.WriteLog(), "writeback_percent=30") && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		took := time.Since(changed)
		b.cancel()
		for !strings.Contains(string(recv()), "STOPPING=1") {
		}
		<-b.done
		l := logs.String()
		if !strings.HasSuffix(sys.WriteLog(), "writeback_percent=30") {
			t.Fatalf("the change was not applied within 15 s: writes %q\n%s", sys.WriteLog(), l)
		}
		if !strings.Contains(l, "pass preempted before it changed anything") {
			t.Fatalf("no preemption: the test did not set up its race\n%s", l)
		}
		if took >= slow {
			t.Errorf("the change was applied %v after it was written, by the full pass over the slow PV (%v per lvm command), not by the fast path it was owed\n%s", took, slow, l)
		}
	})
}

func bcacheChangeDuringSlowPass(t *testing.T, fastFirst bool) {
	b := runBcacheDaemon(t)
	cfg, sys, recv, logs, hup := b.cfg, b.sys, b.recv, b.logs, b.hup
	const slow = 4 * time.Second
	b.run.SlowLVM.Store(int64(slow))
	if fastFirst {
		b.w.write(t, cfg, bcacheCue(35))
	}
	hup <- os.Interrupt // a pass over the slow PV
	recv()              // RELOADING=1
	// systemd's reload ends once the desired state is read again, not
	// after the slow pass (Type=notify-reload's timeout is 90 s).
	if got := string(recv()); !strings.HasPrefix(got, "READY=1") {
		t.Fatalf("after the SIGHUP: %q", got)
	}
	time.Sleep(300 * time.Millisecond)
	changed := time.Now()
	b.w.write(t, cfg, bcacheCue(30))
	deadline := time.Now().Add(10 * time.Second)
	for !strings.HasSuffix(sys.WriteLog(), "writeback_percent=30") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	took := time.Since(changed)
	if !strings.HasSuffix(sys.WriteLog(), "writeback_percent=30") {
		t.Fatalf("the change was not applied within 10 s: writes %q", sys.WriteLog())
	}
	if took >= slow/2 {
		t.Errorf("the change was applied %v after it was written, behind the slow pass (%v per lvm command)", took, slow)
	}
	// The SIGHUP's pass is served again after the change, and ends.
	if got := string(recv()); !strings.HasPrefix(got, "STATUS=") {
		t.Fatalf("after the slow pass: %q", got)
	}
	b.cancel()
	recv() // STOPPING=1
	<-b.done
	l := logs.String()
	if !strings.Contains(l, "pass preempted before it changed anything") {
		t.Errorf("no preemption logged:\n%s", l)
	}
	if n := strings.Count(l, "pass done"); n < 2 {
		t.Errorf("%d passes ended, want the first one and the SIGHUP's again:\n%s", n, l)
	}
}

// runningBcacheDaemon is a bcacheDaemon running (Run), its first pass over,
// with a channel for SIGHUPs.
type runningBcacheDaemon struct {
	cfg    string
	sys    *convergetest.MemSysFS
	run    *convergetest.CountingRunner
	recv   func() []byte
	logs   *strings.Builder
	hup    chan os.Signal
	w      *fakeWatches
	cancel context.CancelFunc
	done   chan error
}

// runBcacheDaemon starts a bcacheDaemon and waits for its first pass.
func runBcacheDaemon(t *testing.T) runningBcacheDaemon {
	t.Helper()
	b := runningBcacheDaemon{hup: make(chan os.Signal, 1), done: make(chan error, 1)}
	var d *Daemon
	b.cfg, b.sys, b.run, d, b.recv, b.logs, b.w = bcacheDaemon(t)
	d.Reload = b.hup
	var ctx context.Context
	ctx, b.cancel = context.WithCancel(context.Background())
	go func() { b.done <- d.Run(ctx) }()
	b.recv() // READY=1
	if got := string(b.recv()); !strings.HasPrefix(got, "STATUS=1 actions converged") {
		t.Fatalf("first pass: %q", got)
	}
	return b
}

// bcacheDaemon is a daemon over the mixed snapshot (one bcache device)
// with b.cue declaring its writeback_percent 40, sd_notify to recv, and its
// log (debug) in logs.
func bcacheDaemon(t *testing.T) (cfg string, sys *convergetest.MemSysFS, run *convergetest.CountingRunner, d *Daemon, recv func() []byte, logs *strings.Builder, w *fakeWatches) {
	t.Helper()
	dir := t.TempDir()
	cfg = filepath.Join(dir, "b.cue")
	os.WriteFile(cfg, []byte(bcacheCue(40)), 0o644)
	src, sys, run := convergetest.Replayed(t, "../../../../probes/testdata/snapshots/mixed.txtar")
	logs = &strings.Builder{}
	d = &Daemon{Log: hclog.New(&hclog.LoggerOptions{Output: &syncWriter{b: logs}, Level: hclog.Debug}),
		NoUevents: true, Debounce: 10 * time.Millisecond}
	recv, w = wire(t, d, []string{dir}, converge.Wiring{StateDir: t.TempDir(), Source: src, SysFS: sys,
		DpkgDir: t.TempDir(), LVMConfPath: filepath.Join(t.TempDir(), "lvm.conf"), Options: executor.Options{MaxAttempts: 1},
		SkipOwnerCheck: true, Log: d.Log})
	return cfg, sys, run, d, recv, logs, w
}

func bcacheCue(wb int) string {
	return "bcache: b0: {\n\tbacking: \"a67c2e52-040c-493e-99e7-8498486cebf1\"\n\twritebackPercent: " + strconv.Itoa(wb) + "\n}\n"
}

// panicRunner panics on the next `left` commands it is asked to run.
type panicRunner struct {
	hostio.Runner
	left atomic.Int32
}

func (r *panicRunner) Run(ctx context.Context, c hostio.Cmd) (hostio.Result, error) {
	if r.left.Add(-1) >= 0 {
		panic("injected: " + c.String())
	}
	return r.Runner.Run(ctx, c)
}

// A pass that panics after a new desired state loaded is recovered: the
// daemon lives on, counts it, puts the last good desired state back with a
// config.invalid finding, and passes with it. The panic comes from the
// runner of mutating commands (lvmconfig --validate of the lvm.conf edit
// the new state asks for), on the daemon's own goroutine.
func TestDaemonRecoversPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		snap, err := hostio.ReadSnapshotFile("../../../../probes/testdata/snapshots/orphan-pv.txtar")
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		cfg := filepath.Join(dir, "desired.cue")
		if err := os.WriteFile(cfg, []byte("lvm: scanLVs: false\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		prom := filepath.Join(t.TempDir(), "keel.prom")
		src := hostio.Replay(snap)
		run := &panicRunner{Runner: src.Runner}
		lvmConf := filepath.Join(t.TempDir(), "lvm.conf")
		if err := os.WriteFile(lvmConf, []byte("devices {\n\tscan_lvs = 0\n}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		var logs strings.Builder
		d := &Daemon{Log: hclog.New(&hclog.LoggerOptions{Output: &syncWriter{b: &logs}, Level: hclog.Info}),
			Textfile: prom, NoUevents: true, Debounce: 10 * time.Millisecond}
		recv, w := wire(t, d, []string{dir}, converge.Wiring{StateDir: t.TempDir(), Source: src, Runner: run, DpkgDir: t.TempDir(), LVMConfPath: lvmConf})
		a := d.Loop
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- d.Run(ctx) }()
		if got := string(recv()); got != "READY=1\nSTATUS=first pass running" {
			t.Fatalf("first notification %q", got)
		}
		if got := string(recv()); !strings.HasPrefix(got, "STATUS=0 actions converged") {
			t.Fatalf("first notification %q", got)
		}

		run.left.Store(1) // the next mutating command panics
		w.write(t, cfg, "lvm: scanLVs: true\n")
		if got := string(recv()); !strings.Contains(got, "1 error") {
			t.Fatalf("after the panicking pass: %q", got)
		}
		if a.Desired() == nil || *a.Desired().LVM.ScanLVs {
			t.Fatal("the last good desired state is not back in force")
		}
		b, _ := os.ReadFile(prom)
		for _, want := range []string{"keel_panics_total 1", `keel_finding_active{id="config.invalid"`, "keel_config_last_reload_successful 0"} {
			if !strings.Contains(string(b), want) {
				t.Errorf("textfile lacks %q:\n%s", want, b)
			}
		}
		cancel()
		recv() // STOPPING=1
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Run: %v", err)
		}
		if l := logs.String(); !strings.Contains(l, "panic in a pass, recovered") || !strings.Contains(l, "injected: env LVM_SYSTEM_DIR=") || !strings.Contains(l, "goroutine") {
			t.Errorf("log lacks the panic and its stack:\n%s", l)
		}
	})
}

// While a removal's bytes advance the watchdog is pinged; when they stop,
// so do the pings (a stalled device gets keel restarted), and after the
// removal ends nothing pings from here.
func TestKeepAliveWhileWiping(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &Daemon{Log: hclog.NewNullLogger(), metrics: alerts.NewMetrics()}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var pings atomic.Int32
		started := make(chan struct{}, 1)
		go d.keepAliveWhileWiping(ctx, started, 10*time.Millisecond, func() error { pings.Add(1); return nil })
		var done atomic.Uint64
		d.metrics.WipeStarted("vg", "lv", func() (uint64, uint64, float64) { return done.Load(), 1 << 30, 1 })
		started <- struct{}{}
		for i := 0; i < 10; i++ { // advancing: pings
			done.Add(1 << 20)
			time.Sleep(15 * time.Millisecond)
		}
		if n := pings.Load(); n < 3 {
			t.Fatalf("%d pings while the wipe advanced", n)
		}
		time.Sleep(30 * time.Millisecond) // settle the last tick after the last advance
		stalled := pings.Load()
		time.Sleep(100 * time.Millisecond) // stalled: no pings
		if n := pings.Load(); n != stalled {
			t.Fatalf("%d pings while the wipe stalled", n-stalled)
		}
		d.metrics.WipeFinished("vg", "lv")
		time.Sleep(30 * time.Millisecond)
		ended := pings.Load()
		done.Add(1 << 20)
		time.Sleep(50 * time.Millisecond)
		if n := pings.Load(); n != ended {
			t.Fatalf("%d pings after the wipe ended", n-ended)
		}
	})
}

// changes is what a daemon's first pass did to the host.
type changes struct {
	status, textfile string
	cmds             []string
	sysfs            string
	lvmConf          bool // lvm.conf was rewritten
	files            []string
}

// firstPass runs the daemon on the mixed snapshot with a desired state
// that asks for a bcache tunable, an lvm.conf edit and an absent LV, until
// its first pass ends, and reports every change it made.
func firstPass(t *testing.T, desired string, audit bool) changes {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "d.cue"), []byte(desired), 0o644); err != nil {
		t.Fatal(err)
	}
	src, sys, _ := convergetest.Replayed(t, "../../../../probes/testdata/snapshots/mixed.txtar")
	run := &convergetest.RecordingRunner{}
	lvmConf := filepath.Join(t.TempDir(), "lvm.conf")
	const conf = "devices {\n\tscan_lvs = 0\n}\n"
	if err := os.WriteFile(lvmConf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	root, state := t.TempDir(), t.TempDir()
	prom := filepath.Join(t.TempDir(), "keel.prom")
	d := &Daemon{Log: hclog.NewNullLogger(), Textfile: prom, NoUevents: true, Audit: audit}
	recv, _ := wire(t, d, []string{dir}, converge.Wiring{Source: src, Runner: run, SysFS: sys, DpkgDir: t.TempDir(), LVMConfPath: lvmConf,
		FileRoot: root, StateDir: state, Options: executor.Options{MaxAttempts: 1}, SkipOwnerCheck: true})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	recv() // READY
	var c changes
	c.status = strings.TrimPrefix(string(recv()), "STATUS=")
	cancel()
	recv() // STOPPING
	<-done
	b, _ := os.ReadFile(prom)
	c.textfile = string(b)
	c.cmds, c.sysfs = run.Cmds, sys.WriteLog()
	b, _ = os.ReadFile(lvmConf)
	c.lvmConf = string(b) != conf
	for _, d := range []string{root, state} {
		filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if err == nil && !e.IsDir() {
				c.files = append(c.files, p)
			}
			return nil
		})
	}
	return c
}

const auditDesired = bcacheBody + `lvm: scanLVs: true
volumeGroups: vg0: {
	pvs: ["/dev/nvme0n1", "/dev/sdb"]
	absent: ["thin1"]
	thinPools: tp: {}
}
`

const bcacheBody = "bcache: b0: {\n\tbacking: \"a67c2e52-040c-493e-99e7-8498486cebf1\"\n\twritebackPercent: 40\n}\n"

// In audit mode (keel run --audit, or agent.mode "audit") the daemon runs
// no mutating command, writes no sysfs attribute, no lvm.conf, no udev
// rule and no state but first sights, and still reports the findings and fill levels. The
// same desired states without audit change the host: the recording sees
// changes when there are any. (An lvm.conf edit comes first and ends the
// pass unverified on a replayed host, so the bcache write has its own state.)
func TestDaemonAuditChangesNothing(t *testing.T) {
	for _, desired := range []string{auditDesired, bcacheBody} {
		var conv changes
		synctest.Test(t, func(t *testing.T) { conv = firstPass(t, desired, false) })
		if len(conv.cmds) == 0 && conv.sysfs == "" && !conv.lvmConf {
			t.Fatalf("converging %q: the recording sees no change", desired)
		}
		t.Logf("converging: commands %q, sysfs %q, lvm.conf rewritten %v", conv.cmds, conv.sysfs, conv.lvmConf)
		want := []string{"keel_audit_mode 1",
			`keel_finding_active{id="bcache.tunable",lv="",object="bcache:a67c2e52-040c-493e-99e7-8498486cebf1",severity="warning",undeclared="false",vg=""} 1`,
			`keel_reconcile_actions_total{status="planned"}`}
		if desired == auditDesired {
			// Audit records thin1's first sight at the bubble's clock
			// (synctest starts it in 2000), before the capture made thin1:
			// keel judges it a reused name and keeps it.
			want = append(want, `keel_finding_active{id="lv.absent_reappeared",lv="thin1",object="vg0/thin1",severity="warning",undeclared="false",vg="vg0"} 1`,
				`keel_thin_data_used_ratio{lv="tp",vg="vg0"} 0`, `keel_thin_data_alert_threshold_ratio{lv="tp",vg="vg0"} 0.85`)
		}
		runs := map[string]changes{}
		synctest.Test(t, func(t *testing.T) {
			runs["--audit"] = firstPass(t, desired, true)
			runs[`agent.mode "audit"`] = firstPass(t, desired+"agent: mode: \"audit\"\n", false)
		})
		for name, run := range runs {
			// The one file audit writes is keel's state, with first sights
			// only (a declared VG's vg_uuid): no action record.
			files := slices.DeleteFunc(slices.Clone(run.files), func(f string) bool {
				return strings.HasSuffix(f, "/state.json") || strings.HasSuffix(f, "/state.json.lock")
			})
			for _, f := range run.files {
				if !strings.HasSuffix(f, "/state.json") {
					continue
				}
				if st, err := (statefile.Store{Path: f}).Load(); err != nil || len(st.Actions) != 0 {
					t.Errorf("%s: state %s: %v, actions %v; want first sights only", name, f, err, st)
				}
			}
			if len(run.cmds) != 0 || run.sysfs != "" || run.lvmConf || len(files) != 0 {
				t.Errorf("%s: commands %q, sysfs writes %q, lvm.conf rewritten %v, files %q", name, run.cmds, run.sysfs, run.lvmConf, files)
			}
			if !strings.HasPrefix(run.status, "audit mode, nothing changed; 0 actions converged") {
				t.Errorf("%s: status %q", name, run.status)
			}
			for _, w := range want {
				if !strings.Contains(run.textfile, w) {
					t.Errorf("%s: textfile lacks %q:\n%s", name, w, run.textfile)
				}
			}
		}
	}
}

// In audit mode a change of bcache tunables takes no fast path: the full
// pass reports the drift and nothing writes sysfs.
func TestDaemonAuditNoFastPath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		cfg := filepath.Join(dir, "b.cue")
		os.WriteFile(cfg, []byte(bcacheCue(40)), 0o644)
		// The pools of mixed are not declared: left unaudited, the status
		// counts the bcache drift alone.
		os.WriteFile(filepath.Join(dir, "agent.cue"), []byte("agent: auditUndeclared: false\n"), 0o644)
		src, sys, _ := convergetest.Replayed(t, "../../../../probes/testdata/snapshots/mixed.txtar")
		var logs strings.Builder
		d := &Daemon{Log: hclog.New(&hclog.LoggerOptions{Output: &syncWriter{b: &logs}, Level: hclog.Debug}),
			NoUevents: true, Debounce: 10 * time.Millisecond, Audit: true}
		recv, w := wire(t, d, []string{dir}, converge.Wiring{Source: src, SysFS: sys, Runner: &convergetest.RecordingRunner{},
			DpkgDir: t.TempDir(), LVMConfPath: filepath.Join(t.TempDir(), "lvm.conf"), StateDir: t.TempDir(), SkipOwnerCheck: true})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- d.Run(ctx) }()
		recv() // READY
		if got := string(recv()); !strings.HasPrefix(got, "STATUS=audit mode, nothing changed; 0 actions converged") {
			t.Fatalf("first pass: %q", got)
		}
		w.write(t, cfg, bcacheCue(30))
		if got := string(recv()); !strings.Contains(got, "1 warning") {
			t.Fatalf("after the bcache change: %q", got)
		}
		cancel()
		recv() // STOPPING=1
		<-done
		if w := sys.WriteLog(); w != "" {
			t.Errorf("audit mode wrote sysfs: %q", w)
		}
		if l := logs.String(); strings.Contains(l, "bcache fast path") || !strings.Contains(l, "the change touches bcache devices only") {
			t.Errorf("log:\n%s", l)
		}
	})
}

// A daemon started while the desired state on disk is invalid (a typo
// pushed by config management, then a restart or a reboot) converges to
// the last one that loaded, as keel activate does, and reports
// config.invalid; it does not run on with no desired state at all.
func TestDaemonStartsOnLastGood(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir, state := t.TempDir(), t.TempDir()
		cfg := filepath.Join(dir, "d.cue")
		if err := os.WriteFile(cfg, []byte(bcacheBody), 0o644); err != nil {
			t.Fatal(err)
		}
		src, sys, _ := convergetest.Replayed(t, "../../../../probes/testdata/snapshots/mixed.txtar")
		w := converge.Wiring{Source: src, Runner: &convergetest.RecordingRunner{}, SysFS: sys,
			DpkgDir: t.TempDir(), LVMConfPath: filepath.Join(t.TempDir(), "lvm.conf"), FileRoot: t.TempDir(), StateDir: state,
			Options: executor.Options{MaxAttempts: 1}, SkipOwnerCheck: true, KeepLastGood: true}
		// An earlier start loaded it and kept the copy.
		if err := converge.New([]string{dir}, w).Load(converge.New([]string{dir}, w).Read()); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cfg, []byte(bcacheBody+"volumeGroups: vg0: pvz: 1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		prom := filepath.Join(t.TempDir(), "keel.prom")
		d := &Daemon{Log: hclog.NewNullLogger(), Textfile: prom, NoUevents: true}
		recv, _ := wire(t, d, []string{dir}, w)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- d.Run(ctx) }()
		recv() // READY
		status := string(recv())
		cancel()
		recv() // STOPPING
		<-done
		if !strings.Contains(sys.WriteLog(), "writeback_percent") {
			t.Errorf("the last good desired state was not converged: sysfs writes %q, status %q", sys.WriteLog(), status)
		}
		b, _ := os.ReadFile(prom)
		if !strings.Contains(string(b), `keel_finding_active{id="config.invalid"`) {
			t.Errorf("config.invalid not reported:\n%s", b)
		}
	})
}
