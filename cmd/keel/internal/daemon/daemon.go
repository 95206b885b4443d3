// Package daemon is the process plumbing of keel run around the
// convergence loop (reconcile/converge): file watches on the desired state
// and lvm.conf, kernel uevents, the debounce of triggers, sd_notify READY,
// STATUS and WATCHDOG, journald alerts, the alerts hook and the Prometheus
// textfile. Every change to the host is made by the loop.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/keel-storage/keel/cmd/keel/internal/alerts"
	"github.com/keel-storage/keel/cmd/keel/internal/uevent"
	"github.com/keel-storage/keel/cmd/keel/internal/watch"
	"github.com/keel-storage/keel/internal/notify"
	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/reconcile/apply/executor"
	"github.com/keel-storage/keel/reconcile/apply/wipe"
	"github.com/keel-storage/keel/reconcile/converge"
	"github.com/keel-storage/keel/reconcile/plan"
	"github.com/keel-storage/keel/reconcile/plan/removal"
	"github.com/keel-storage/keel/schema"
	"github.com/keel-storage/keel/schema/spec"
)

// Daemon is keel run: it keeps the host converged, passing whenever the
// desired state, lvm.conf, LVM metadata or a block device changes (the
// change signal, signal.go), and every Resync.
type Daemon struct {
	Loop *converge.Loop
	Log  hclog.Logger
	// LVMConfPath is watched so a package upgrade that resets lvm.conf is
	// re-asserted at once.
	LVMConfPath string
	// Resync is the period of unconditional passes, the safety net behind
	// the change signal (default 1h).
	Resync time.Duration
	// Poll is the period of the LVM metadata stamp reads (default 30s).
	Poll time.Duration
	// Stamp reads a PV's LVM metadata stamp; nil turns the poll off.
	Stamp StampFunc
	// Seqnos reads every VG's vg_seqno (probes.VGSeqnos). With Stamp, it
	// lets a pass hand the poll stamps it can trust (offerBaseline), so
	// that the poll's first tick after the start does not start a pass on
	// a host where nothing changed. Nil: every PV the poll has not stamped
	// before counts as changed, the start's PVs included.
	Seqnos func(context.Context) (map[string]uint64, error)
	// PoolKey reads the kernel's thin and VDO pool status, coarsely
	// (probes.PoolStatusKey), at every Poll; a change starts a pass, so
	// fill alerts and pool modes do not wait for the resync. Nil: not read.
	PoolKey func(context.Context) (string, error)
	// EventGap is the least time from the end of a pass started by block
	// uevents to the start of the next one while they keep coming (default
	// 2s).
	EventGap time.Duration
	// Debounce delays a pass after a trigger so a burst of them from
	// several sources is one pass (default 20ms; the file watches have
	// already waited for 100ms of quiet and compared the content by then).
	Debounce time.Duration
	// Textfile overrides alerts.textfile of the desired state.
	Textfile string
	// NoUevents disables the kernel uevent listener.
	NoUevents bool
	// Reload receives a value for each SIGHUP.
	Reload <-chan os.Signal
	// Audit (keel run --audit) makes every pass a dry run: keel probes,
	// plans, logs, alerts and writes its metrics, and changes nothing on
	// the host. agent.mode "audit" in the desired state does the same.
	Audit bool
	// Liveness, when set, is the runner every command of the loop goes
	// through: while a pass runs, the watchdog is pinged as long as its
	// commands advance (keepAliveWhilePassing).
	Liveness *Liveness
	// Notify sends READY, STATUS, RELOADING, STOPPING and WATCHDOG; its
	// zero value sends them to systemd.
	Notify notify.Sender
	// Watch watches a directory (watch.Watch when nil).
	Watch WatchFunc

	tracker *alerts.Tracker
	metrics *alerts.Metrics
	// wipeStarted and wipeAlive wake publishWipes and keepAliveWhileWiping
	// when a safe removal starts.
	wipeStarted, wipeAlive chan struct{}
	// levels are the fill levels of the last pass that probed.
	levels []plan.Level
	// wipeTextfile is the textfile path publishWipes writes to while a
	// safe removal runs (set when it starts).
	wipeTextfile atomic.Value
	// passing is set while the loop runs a pass.
	passing atomic.Bool
	// pvDevs are the PV device paths of the last probe ([]string), whose
	// metadata stamps pollMetadata reads.
	pvDevs atomic.Value
	// baseline holds stamps offerBaseline verified, which pollMetadata
	// takes at its next tick for the PVs it has not stamped yet.
	baselineMu sync.Mutex
	baseline   map[string]string
	baselined  atomic.Bool // offerBaseline ran
}

// WatchFunc watches the files of dir that match: the signature of
// watch.Watch.
type WatchFunc func(ctx context.Context, dir string, match func(string) bool, o watch.Options, onChange func(watch.Sum), onErr func(error)) error

type trigger struct {
	reload bool
	why    string
	// fast waits 50ms whatever the Debounce: a bcache registration's add
	// and change uevents come within tens of milliseconds, and its tunables
	// are wanted at once.
	fast bool
	// hup is a SIGHUP (systemctl reload): READY=1 once the desired state
	// is read again, before the pass (serving.reloaded).
	hup bool
	// done are closed when the pass serving the trigger has ended.
	done []chan struct{}
}

// finish tells whoever waits on t that its pass has ended.
func (t trigger) finish() {
	for _, c := range t.done {
		close(c)
	}
}

// Run loads the desired state, starts its watches, tells systemd it is
// ready, passes once and then serves triggers until ctx ends. The loop
// must have been wired with WipeObserver.
func (d *Daemon) Run(ctx context.Context) error {
	d.setDefaults()
	d.init()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	d.publishWipeProgress(ctx)
	triggers, stop := d.listen(ctx)
	defer stop()

	// READY as soon as keel listens: the first pass can be long (a pool to
	// create, a wipe), and until READY systemd holds keel to
	// TimeoutStartSec, while WatchdogSec is armed only after it.
	if iv := notify.WatchdogInterval(); iv > 0 && d.Liveness != nil {
		go d.keepAliveWhilePassing(ctx, iv, d.Notify.Watchdog)
	}
	_ = d.Notify.Ready("first pass running")
	summary := d.busy(func() string { return d.safePass(ctx, "start", nil) })
	_ = d.Notify.Status(summary)
	d.Log.Info("keel running", "status", summary)
	return d.serveTriggers(ctx, triggers)
}

// setDefaults fills in the periods left zero.
func (d *Daemon) setDefaults() {
	if d.Resync <= 0 {
		d.Resync = time.Hour
	}
	if d.Poll <= 0 {
		d.Poll = 30 * time.Second
	}
	if d.EventGap <= 0 {
		d.EventGap = 2 * time.Second
	}
	if d.Debounce <= 0 {
		d.Debounce = 20 * time.Millisecond
	}
}

// listen starts the sources of triggers (the file watches, kernel uevents,
// the metadata poll) and reads the desired state. It returns the queue
// they send to and the function that stops what must be stopped.
func (d *Daemon) listen(ctx context.Context) (chan trigger, func()) {
	triggers := make(chan trigger, 64)
	trySend := func(t trigger) bool {
		select {
		case triggers <- t:
			return true
		default: // a pass is queued already; it will see the change
			return false
		}
	}
	send := func(t trigger) { trySend(t) }

	// The watches first, then the read: a desired state written while keel
	// starts is either in what it reads or a change the watch reports.
	d.startWatches(ctx, send)
	if err := d.load(d.Loop.Read()); err != nil && d.Loop.Desired() == nil {
		d.startOnLastGood()
	}
	var stops []func()
	if stop := d.startUevents(ctx, trySend); stop != nil {
		stops = append(stops, stop)
	}
	if d.Stamp != nil || d.PoolKey != nil {
		poll := time.NewTicker(d.Poll)
		stops = append(stops, poll.Stop)
		go d.pollMetadata(ctx, poll.C, d.Stamp, send)
	}
	return triggers, func() {
		for _, stop := range stops {
			stop()
		}
	}
}

// serveTriggers feeds the scheduler every event (a trigger from the queue,
// a SIGHUP, the resync, the end of a serve) and carries its decisions out,
// until ctx ends. One trigger is served at a time, on its own goroutine
// (cur), so that triggers are still taken while it runs; the loop itself
// pings the watchdog while no serve runs.
func (d *Daemon) serveTriggers(ctx context.Context, triggers chan trigger) error {
	var wd <-chan time.Time
	if iv := notify.WatchdogInterval(); iv > 0 {
		t := time.NewTicker(iv)
		defer t.Stop()
		wd = t.C
	}
	resync := time.NewTicker(d.Resync)
	defer resync.Stop()
	sched := scheduler{debounce: d.Debounce}
	var cur *serving
	for {
		var ended <-chan string
		if cur != nil {
			ended = cur.done
		}
		var dec decision
		var t trigger
		select {
		case <-ctx.Done():
			if cur != nil {
				<-cur.done
			}
			_ = d.Notify.Stopping()
			return ctx.Err()
		case <-wd:
			if sched.idle() {
				_ = d.Notify.Watchdog() // from the loop itself: a hung loop stops the pings
			} // while a pass runs, keepAliveWhilePassing pings as its commands advance
			continue
		case <-d.Reload:
			_ = d.Notify.Reloading()
			t = trigger{reload: true, hup: true, why: "SIGHUP"}
			dec = sched.add(t, fromSignal)
		case t = <-triggers:
			d.Log.Debug("trigger", "why", t.why)
			dec = sched.add(t, fromQueue)
		case <-resync.C:
			t = trigger{why: "resync"}
			dec = sched.add(t, fromResync)
		case status := <-ended:
			dec = d.ended(&sched, cur, status)
			cur = nil
		}
		if dec.preempt && cur.gate.Preempt() {
			d.Log.Debug("preempting the pass", "why", cur.t.why, "by", t.why)
		}
		if dec.settle > 0 && !sleep(ctx, dec.settle) {
			continue // ctx ended: the next turn stops
		}
		if dec.drain {
			drain(&sched, triggers)
		}
		if dec.start {
			if t, preemptible, ok := sched.next(); ok {
				cur = d.startServing(ctx, t, preemptible)
			}
		}
	}
}

// ended tells the scheduler that cur ended with status, and tells systemd
// and the trigger's waiters, unless it was preempted: then it is served
// again after what preempted it, with it.
func (d *Daemon) ended(sched *scheduler, cur *serving, status string) decision {
	e, dec := sched.ended(outcome{preempted: cur.gate.Preempted(), reloaded: cur.reloaded.Load(), fastOwed: cur.fastOwed.Load()})
	switch {
	case e.preempted:
		d.Log.Info("pass preempted before it changed anything", "why", cur.t.why, "by", e.by)
	case e.ready:
		_ = d.Notify.Ready(status) // it failed before its reload
	default:
		_ = d.Notify.Status(status)
	}
	if e.finish != nil {
		e.finish.finish()
	}
	return dec
}

// serving is a trigger being served on its own goroutine. Run reads its
// fields once done has received, or through their synchronisation.
type serving struct {
	t    trigger
	gate *converge.Gate
	// done receives the pass's status line when it ends.
	done chan string
	// reloaded is set once a SIGHUP's desired state is read again and
	// READY=1 sent: systemd's reload ends there (Type=notify-reload), not
	// after the pass, which over a slow PV outlasts its reload timeout.
	reloaded atomic.Bool
	// fastOwed is set while the serve owes the bcache fast path (its
	// trigger asked for it, or its reload found a bcache-only change) and
	// the fast path has not run to its end: a preempted serve hands it on.
	fastOwed atomic.Bool
}

// startServing serves t on a goroutine; preemptible gives its pass a gate
// that a newer trigger may close (Gate.Preempt).
func (d *Daemon) startServing(ctx context.Context, t trigger, preemptible bool) *serving {
	passCtx, cancel := context.WithCancel(ctx)
	s := &serving{t: t, done: make(chan string, 1)}
	if preemptible {
		s.gate = converge.NewGate(cancel)
	}
	go func() {
		defer cancel()
		h := serveHooks{fast: &s.fastOwed, gate: s.gate}
		if t.hup {
			h.loaded = func() {
				_ = d.Notify.Ready("desired state read again; passing")
				s.reloaded.Store(true)
			}
		}
		s.done <- d.busy(func() string { return d.serve(passCtx, t.reload, t.fast, t.why, h) })
	}()
	return s
}

// busy runs a pass (fn) with passing set, for keepAliveWhilePassing.
func (d *Daemon) busy(fn func() string) string {
	d.passing.Store(true)
	defer d.passing.Store(false)
	return fn()
}

// sleep waits for wait and reports false when ctx ended meanwhile.
func sleep(ctx context.Context, wait time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(wait):
		return true
	}
}

// drain folds every trigger queued into the scheduler's pending one, so
// that a burst is one pass.
func drain(s *scheduler, queued <-chan trigger) {
	for {
		select {
		case t := <-queued:
			s.queued(t)
		default:
			return
		}
	}
}

// init makes what both WipeObserver and Run use.
func (d *Daemon) init() {
	if d.metrics != nil {
		return
	}
	d.tracker = alerts.NewTracker()
	d.metrics = alerts.NewMetrics()
	d.wipeStarted = make(chan struct{}, 1)
	d.wipeAlive = make(chan struct{}, 1)
}

// WipeObserver is what the loop must be wired with (converge.Wiring.Wipes)
// so that the daemon publishes the progress of safe removals as metrics
// and keeps the watchdog pinged while their bytes advance. Call it before
// Run, on the goroutine that calls Run.
func (d *Daemon) WipeObserver() converge.WipeObserver {
	d.init()
	metrics, wipes, alive := d.metrics, d.wipeStarted, d.wipeAlive
	return converge.WipeObserver{
		Started: func(t removal.Target, _ removal.Mode, p *wipe.Progress) {
			d.wipeTextfile.Store(d.textfile()) // read here, on the pass's goroutine
			metrics.WipeStarted(t.VG, t.LV, func() (uint64, uint64, float64) {
				s := p.Stat()
				return s.Done, s.Total, s.Rate
			})
			select {
			case wipes <- struct{}{}:
			default: // publishWipes is awake already
			}
			select {
			case alive <- struct{}{}:
			default: // keepAliveWhileWiping is awake already
			}
		},
		Finished: func(t removal.Target, _ removal.Mode, _ *wipe.Progress, _ error) { metrics.WipeFinished(t.VG, t.LV) },
	}
}

// publishWipeProgress publishes the progress of safe removals as metrics
// while they run (publishWipes), as WipeObserver reports them.
func (d *Daemon) publishWipeProgress(ctx context.Context) {
	go d.publishWipes(ctx, d.wipeStarted, 5*time.Second)
	if iv := notify.WatchdogInterval(); iv > 0 {
		go d.keepAliveWhileWiping(ctx, d.wipeAlive, iv, d.Notify.Watchdog)
	}
}

// keepAliveWhileWiping pings the systemd watchdog every interval while a
// safe removal runs and its bytes advance. A wipe runs inside a pass, so the
// loop's own pings stop; a wipe of a thick LV without WRITE ZEROES can take
// far longer than WatchdogSec. The pings go on only while the wipe makes
// progress: a stalled device still stops them, and systemd restarts keel,
// which resumes the wipe from its last checkpoint (docs/removal.md).
func (d *Daemon) keepAliveWhileWiping(ctx context.Context, started <-chan struct{}, interval time.Duration, ping func() error) {
	var last uint64
	d.whileWiping(ctx, started, interval, func() { last = d.metrics.WipeDone() }, func() {
		if done := d.metrics.WipeDone(); done > last {
			_ = ping()
			last = done
		} else {
			d.Log.Warn("safe removal made no progress for a watchdog interval", "interval", interval.String())
		}
	})
}

// whileWiping sleeps until started says a safe removal began, calls begin,
// then tick every interval while removals are in flight, and sleeps again:
// an idle daemon has no timer to wake it.
func (d *Daemon) whileWiping(ctx context.Context, started <-chan struct{}, interval time.Duration, begin, tick func()) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-started:
		}
		begin()
		t := time.NewTicker(interval)
		for d.metrics.WipesInFlight() > 0 {
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			tick()
		}
		t.Stop()
	}
}

// startWatches watches the desired state and lvm.conf.
func (d *Daemon) startWatches(ctx context.Context, send func(trigger)) {
	started := make(chan struct{}, 2)
	n := 1
	dir, match := configWatch(d.Loop.Paths())
	go d.watch(ctx, dir, match, started, func() { send(trigger{reload: true, why: "desired state changed"}) })
	if d.LVMConfPath != "" {
		n++
		go d.watch(ctx, filepath.Dir(d.LVMConfPath), watch.Named(filepath.Base(d.LVMConfPath)), started,
			func() { send(trigger{why: "lvm.conf changed"}) })
	}
	// Wait until both watch (a directory that does not exist yet is
	// retried by d.watch; the resync covers it meanwhile).
	timeout := time.After(5 * time.Second)
	for ; n > 0; n-- {
		select {
		case <-started:
		case <-timeout:
			d.Log.Warn("file watches not established within 5s: a change made before they are is seen at the next resync")
			return
		case <-ctx.Done():
			return
		}
	}
}

// startUevents listens to kernel uevents: bcache registrations take the
// fast path at once, every other block device event is coalesced
// (blockEvents). It returns the function that closes the listener (nil when
// none runs).
func (d *Daemon) startUevents(ctx context.Context, send func(trigger) bool) func() {
	if d.NoUevents {
		return nil
	}
	l, err := uevent.Listen()
	if err != nil {
		d.Log.Error("no kernel uevents: bcache re-registrations and device-mapper changes wait for the metadata poll or the resync", "err", err)
		return nil
	}
	q := make(eventQueue, 1)
	go blockEvents(ctx, q, d.EventGap, func(why string) <-chan struct{} {
		done := make(chan struct{})
		if !send(trigger{why: why, done: []chan struct{}{done}}) {
			close(done) // a queued pass, not started yet, serves it
		}
		return done
	})
	later := func(f func()) { time.AfterFunc(bcacheRemoveDelay, f) }
	go l.Run(ctx, func(e uevent.Event) {
		d.onUevent(e, send, q, later)
	}, func(err error) {
		d.Log.Warn("uevent", "err", err)
		q.offer("uevents lost")
	})
	return func() { l.Close() }
}

// configWatch returns the directory to watch for the desired state and
// the names in it that matter.
func configWatch(paths []string) (string, func(string) bool) {
	p := paths[0]
	if st, err := os.Stat(p); err == nil && st.IsDir() {
		return p, watch.CueFiles
	}
	return filepath.Dir(p), watch.Named(filepath.Base(p))
}

// watch keeps a watch on dir running until ctx ends; started receives one
// value the first time the watch is established.
func (d *Daemon) watch(ctx context.Context, dir string, match func(string) bool, started chan<- struct{}, fire func()) {
	var once sync.Once
	w := d.Watch
	if w == nil {
		w = watch.Watch
	}
	for ctx.Err() == nil {
		err := w(ctx, dir, match, watch.Options{Debounce: 100 * time.Millisecond,
			Started: func() { once.Do(func() { started <- struct{}{} }) }},
			func(watch.Sum) { fire() },
			func(err error) { d.Log.Warn("watch", "dir", dir, "err", err); fire() })
		if ctx.Err() != nil {
			return
		}
		d.Log.Error("watch stopped, retrying", "dir", dir, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
		}
	}
}

// serve answers a trigger: it reloads the desired state when asked, takes
// the bcache fast path when fast is set or when the reload changed bcache
// devices only, and then runs a full pass. When it reloads, the full
// probe of that pass starts at once and runs while the desired state is
// loaded (it reads only the host, and it starts after the event, so the
// pass still plans against what the host reports after the change),
// unless the files look changed in bcache fields only (MaybeBcacheOnly).
func (d *Daemon) serve(ctx context.Context, reload, fast bool, why string, h serveHooks) string {
	prev := d.Loop.InForce()
	var status string
	err := d.recovered(why, func() { status = d.serveOnce(ctx, reload, fast, why, h) })
	if err == nil {
		return status
	}
	if d.Loop.Changed(prev) {
		// The new desired state loaded but keel crashed working on it: put
		// the last good one back, say so, and pass with that.
		d.Loop.Restore(prev, fmt.Errorf("keel crashed working on it (%w); the last good desired state is back in force", err))
		d.metrics.Reload(false, time.Now())
		d.Log.Error("config.invalid: the last good desired state is back in force", "finding", plan.ConfigInvalid, "err", err)
		return d.safePass(ctx, why+" (last good desired state)", h.gate)
	}
	return "last pass failed (see the log): " + err.Error()
}

// safePass is pass with a panic recovered (see recovered).
func (d *Daemon) safePass(ctx context.Context, why string, gate *converge.Gate) string {
	var status string
	if err := d.recovered(why, func() { status = d.pass(ctx, why, converge.Options{Gate: gate}) }); err != nil {
		return "last pass failed (see the log): " + err.Error()
	}
	return status
}

// recovered runs fn and turns a panic in it into an error: logged with its
// stack and counted (keel_panics_total), so that one bad pass does not end
// the daemon and stop the host's convergence.
func (d *Daemon) recovered(why string, fn func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			d.metrics.Panicked()
			d.Log.Error("panic in a pass, recovered", "why", why, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	fn()
	return nil
}

// serveHooks tie a serve to the serving that runs it (both may be nil).
type serveHooks struct {
	// loaded runs once the desired state is read again (a SIGHUP's READY=1).
	loaded func()
	// fast is set while the fast path is owed and not yet run to its end.
	fast *atomic.Bool
	// gate, when set, lets a newer trigger preempt the serve's passes.
	gate *converge.Gate
}

// owe records whether the fast path is still owed.
func (h serveHooks) owe(v bool) {
	if h.fast != nil {
		h.fast.Store(v)
	}
}

// serveOnce is serve without the panic recovery.
func (d *Daemon) serveOnce(ctx context.Context, reload, fast bool, why string, hooks serveHooks) string {
	var early, earlySys *earlyProbe
	if reload {
		files, rerr := d.Loop.Read()
		// Not when the fast path will run first: its writes would make
		// this probe stale. The fast path's own sysfs read can start now.
		maybe := rerr == nil && d.Loop.MaybeBcacheOnly(files)
		if !fast && !maybe {
			early = startProbe(ctx, d.Loop.Probe, false)
		}
		if maybe {
			earlySys = startProbe(ctx, d.Loop.SysfsProbe, true)
		}
		prev := d.Loop.Desired()
		if d.load(files, rerr) == nil && converge.BcacheOnly(prev, d.Loop.Desired()) {
			d.Log.Debug("the change touches bcache devices only: fast path first")
			fast = true
		}
		if hooks.loaded != nil {
			hooks.loaded()
		}
	}
	if fast && d.audit() {
		fast = false // the full pass that follows reports the tunables
	}
	hooks.owe(fast)
	if fast {
		if early != nil {
			// Its view of bcache predates the fast path's writes: the
			// full pass probes again after them.
			early.cancel()
			early.wait()
			early = nil
		}
		var h *model.Host
		if earlySys != nil {
			h = earlySys.wait()
		}
		start := time.Now()
		rep, err := d.Loop.BcachePass(ctx, converge.Options{Host: h, Gate: hooks.gate})
		d.Log.Info("bcache fast path", "why", why, "converged", rep.Count(executor.Converged), "took", converge.Since(start), "err", err)
		if !errors.Is(err, converge.ErrPreempted) {
			hooks.owe(false)
		}
	}
	if earlySys != nil {
		earlySys.cancel() // not a bcache-only change after all
		earlySys.wait()
	}
	var h *model.Host
	if early != nil {
		h = early.wait() // nil when it failed: the pass probes again
	}
	return d.pass(ctx, why, converge.Options{Host: h, Gate: hooks.gate})
}

// earlyProbe is a full probe running while the daemon loads the desired
// state.
type earlyProbe struct {
	cancel context.CancelFunc
	done   chan struct{}
	host   *model.Host
}

// startProbe runs probe (Loop.Probe, or Loop.SysfsProbe) in the
// background. Its host is kept when it succeeded, or, with sysfs set (a
// SysfsProbe always reports the LVM commands it did not run), whenever
// it was not cancelled.
func startProbe(ctx context.Context, probe func(context.Context) (*model.Host, error), sysfs bool) *earlyProbe {
	ctx, cancel := context.WithCancel(ctx)
	p := &earlyProbe{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		h, err := probe(ctx)
		if err == nil || (sysfs && ctx.Err() == nil) {
			p.host = h
		}
	}()
	return p
}

// wait returns the probed host once the probe ends (nil when it failed).
func (p *earlyProbe) wait() *model.Host {
	<-p.done
	p.cancel()
	return p.host
}

// load loads the desired state from files read by Loop.Read (readErr is
// Read's error); on error the last good one stays.
func (d *Daemon) load(files []schema.File, readErr error) error {
	start := time.Now()
	err := d.Loop.Load(files, readErr)
	d.metrics.Reload(err == nil, time.Now())
	if err != nil {
		var invalid *schema.Error
		if errors.As(err, &invalid) {
			for _, p := range invalid.Problems {
				d.Log.Error(string(plan.ConfigInvalid), "finding", plan.ConfigInvalid, "problem", p.String())
			}
		}
		d.Log.Error("config.invalid: the last good desired state stays in force", "finding", plan.ConfigInvalid, "err", err)
		return err
	}
	d.Log.Info("desired state loaded", "paths", fmt.Sprint(d.Loop.Paths()), "took", converge.Since(start))
	return nil
}

// startOnLastGood puts the last desired state that loaded in force when
// the one on disk is invalid as the daemon starts (a restart or a boot
// after a bad push), as keel activate does; config.invalid stays raised.
func (d *Daemon) startOnLastGood() {
	lg, err := d.Loop.LoadLastGood()
	if err != nil {
		d.Log.Error("config.invalid: no last good desired state to start on; nothing is converged until the desired state loads",
			"finding", plan.ConfigInvalid, "err", err)
		return
	}
	d.Log.Warn("config.invalid: started on the last good desired state; fix the desired state (keel vet)",
		"finding", plan.ConfigInvalid, "path", lg.Path, "saved", lg.Saved.Format(time.RFC3339))
}

// pass runs passes until the host converges (Converge; the first plans
// against o.Host when it is set, o.Gate may preempt them) and publishes
// the outcome; it returns the one-line status.
func (d *Daemon) pass(ctx context.Context, why string, o converge.Options) string {
	start := time.Now()
	cpu0 := cpuNow()
	audit := d.audit()
	o.Mode = executor.Mode{DryRun: audit}
	res, err := d.Loop.Converge(ctx, o)
	statuses := map[string]int{}
	for _, r := range res.Report.Results {
		statuses[string(r.Status)]++
		if r.Status == executor.Planned {
			d.Log.Info("audit: action not run", "action", r.Action.ID, "object", r.Action.Object)
		} else if r.Status != executor.Converged && r.Status != executor.Skipped {
			d.Log.Warn("action not converged", "action", r.Action.ID, "object", r.Action.Object, "status", string(r.Status), "detail", r.Detail)
		}
	}
	if ctx.Err() != nil {
		return "stopping" // an interrupted pass says nothing about the host
	}
	findings, levels := res.Findings, res.Levels
	if err != nil {
		d.Log.Error("reconcile pass failed", "why", why, "err", err)
		if !errors.Is(err, converge.ErrNoDesiredState) {
			// A failed probe is not a host without findings: keep the last
			// known ones (raising nothing, clearing nothing) and refresh
			// only config.invalid.
			findings = keepFindings(d.tracker.Active(), res.Findings)
			levels = d.levels
		}
	}
	d.levels = levels
	if err == nil {
		d.notePVs(res.Host)
		d.offerBaseline(ctx, res.Host)
	}
	ts := d.tracker.Update(findings)
	alerts.Log(d.Log, ts)
	var desiredAlerts spec.Alerts
	if cfg := d.Loop.Desired(); cfg != nil {
		desiredAlerts = cfg.Alerts
	}
	if len(ts) > 0 && len(desiredAlerts.Exec) > 0 {
		if herr := (alerts.Hook{Argv: desiredAlerts.Exec}).Run(ctx, ts); herr != nil {
			d.Log.Error("alert hook failed", "err", herr)
		}
	}
	d.metrics.Audit(audit)
	d.metrics.Pass(time.Now(), err, statuses, findings, levels)
	if textfile := d.textfile(); textfile != "" {
		d.writeTextfile(textfile)
	}
	s := statusLine(res, findings, err)
	if audit {
		s = "audit mode, nothing changed; " + s
	}
	cpu := cpuNow().sub(cpu0)
	d.Log.Info("pass done", "why", why, "took", converge.Since(start), "status", s,
		"cpu_self", cpu.self.Round(time.Millisecond).String(), "cpu_children", cpu.children.Round(time.Millisecond).String(),
		"lvm_digest", lvmDigest(res.Host))
	return s
}

// keepFindings returns the previous findings with config.invalid taken
// from the current pass.
func keepFindings(prev, cur []plan.Finding) []plan.Finding {
	var out []plan.Finding
	for _, f := range prev {
		if f.ID != plan.ConfigInvalid {
			out = append(out, f)
		}
	}
	for _, f := range cur {
		if f.ID == plan.ConfigInvalid {
			out = append(out, f)
		}
	}
	return out
}

// statusLine is the one-line STATUS= summary.
func statusLine(res converge.PassResult, findings []plan.Finding, err error) string {
	counts := map[plan.Severity]int{}
	for _, f := range findings {
		counts[f.Severity]++
	}
	s := fmt.Sprintf("%d actions converged, %d stuck; findings: %d critical, %d error, %d warning",
		res.Report.Count(executor.Converged), res.Report.Count(executor.Stuck),
		counts[plan.Critical], counts[plan.Error], counts[plan.Warning])
	if err != nil {
		s = "last pass failed (see the log); " + s
	}
	return s
}

// audit reports whether passes are dry runs: keel run --audit, or agent.mode
// "audit" in the desired state in force.
func (d *Daemon) audit() bool {
	if d.Audit {
		return true
	}
	cfg := d.Loop.Desired()
	return cfg != nil && cfg.Agent.Mode == spec.AgentAudit
}

// textfile is where the metrics go: --textfile, else alerts.textfile of the
// desired state in force ("" for none).
func (d *Daemon) textfile() string {
	if d.Textfile != "" {
		return d.Textfile
	}
	if cfg := d.Loop.Desired(); cfg != nil {
		return cfg.Alerts.Textfile
	}
	return ""
}

// writeTextfile writes the metrics to path and logs a failure. A
// read-only file system there is most often keel.service's sandbox
// (ProtectSystem=strict): the message says how to allow the directory.
func (d *Daemon) writeTextfile(path string) {
	err := d.metrics.WriteTextfile(path)
	switch {
	case errors.Is(err, syscall.EROFS):
		d.Log.Error("metrics textfile: read-only here; under systemd allow its directory with `systemctl edit keel`: [Service] ReadWritePaths="+filepath.Dir(path),
			"path", path, "err", err)
	case err != nil:
		d.Log.Error("metrics textfile", "path", path, "err", err)
	}
}

// publishWipes rewrites the metrics textfile every interval while a safe
// removal is in progress, so its keel_wipe_* progress is visible before the
// pass that runs it ends.
func (d *Daemon) publishWipes(ctx context.Context, started <-chan struct{}, interval time.Duration) {
	d.whileWiping(ctx, started, interval, func() {}, func() {
		if path, _ := d.wipeTextfile.Load().(string); path != "" && d.metrics.WipesInFlight() > 0 {
			d.writeTextfile(path)
		}
	})
}

// cpuTimes is the CPU time used by keel itself (all threads) and by its
// waited-for children (the probe and action commands).
type cpuTimes struct{ self, children time.Duration }

func cpuNow() cpuTimes {
	var s, c syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &s)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &c)
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return cpuTimes{self: tv(s.Utime) + tv(s.Stime), children: tv(c.Utime) + tv(c.Stime)}
}

func (t cpuTimes) sub(u cpuTimes) cpuTimes {
	return cpuTimes{self: t.self - u.self, children: t.children - u.children}
}
