// Package bootwatch watches lvm2's own boot activation of the declared
// VGs: it waits while udev's lvm-activate-<vg>.service units run, reads
// LVM's metadata beside them, and confirms from device-mapper, once they
// have ended, that every declared VG is up. It reads the host only, and
// holds no CUE: keel activate (through converge) and keel-boot, the small
// program keel-activate.service starts first, share it.
package bootwatch

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/keel-storage/keel/probes"
	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/reconcile/activation"
	"github.com/keel-storage/keel/schema/spec"
)

// Watch watches lvm2's activation of Desired's VGs on Source, and says
// what it sees in Log (none when nil).
type Watch struct {
	Source  hostio.Source
	Desired *spec.Config
	Log     hclog.Logger
	// Wake, when not nil, wakes WaitForLVM when what it watches changes
	// (hostio.Changes on the live host), so that it sleeps while lvm2
	// activates and looks again the moment a unit starts or empties; nil
	// makes it look every lvmActivationTick (a recorded or replayed host,
	// tests on a fake clock).
	Wake Waker
}

// Waker tells WaitForLVM when a path it watches changes; hostio.Changes
// is one.
type Waker interface {
	// Add watches a host path: a directory for entries made or removed
	// in it, a file for writes to it.
	Add(name string) error
	// C receives after a watched path changed.
	C() <-chan struct{}
}

// LiveWaker returns inotify on src's files (hostio.Changes) and the func
// that ends it, or nil and a no-op when src cannot be watched (a recorded
// or replayed host): the wait then looks on a timer.
func LiveWaker(src hostio.Source, log hclog.Logger) (Waker, func()) {
	ch, err := hostio.NewChanges(src.FS)
	if err != nil {
		log.Debug("lvm2's activation watched on a timer", "err", err)
		return nil, func() {}
	}
	return ch, func() { _ = ch.Close() }
}

func (w Watch) log() hclog.Logger {
	if w.Log == nil {
		return hclog.NewNullLogger()
	}
	return w.Log
}

// How keel watches lvm2's own autoactivation (Watch.WaitForLVM): each
// look lists the activation units' cgroups (one directory) and looks at
// the processes it already waits on (one file each). Without a Waker it
// looks every lvmActivationTick, so that it probes within a tick of
// lvm2's end. With one it looks when a watched path changes, and every
// lvmActivationFallback besides, for what no watch covers (a unit's
// cgroup removed and made again between two looks); it looks every tick
// while a watch cannot be added, while a vgchange runs outside a watched
// unit, and once after adding a watch, for a change that came before it.
// All of /proc, a file per process, it reads every lvmActivationScan
// while the units cannot be listed, and before it ends.
const (
	lvmActivationTick     = 25 * time.Millisecond
	lvmActivationFallback = 250 * time.Millisecond
	lvmActivationScan     = 200 * time.Millisecond
	// udevSettleMax bounds the wait for udev's queue to empty when no
	// activation of lvm2's runs: the uevents of LVs just activated are
	// what starts lvm2's activation of a VG stacked on them.
	udevSettleMax = 3 * time.Second
)

// WaitForLVM waits, until deadline, while lvm2's own event
// autoactivation activates a declared VG: a `vgchange -aay
// --autoactivation event <vg>` in /proc (probes.Autoactivations), or
// udev's lvm-activate-<vg>.service while it has a cgroup
// (probes.ActivationUnits), which covers the moment between the unit's
// start and its process becoming vgchange, until the cgroup has held a
// process and holds none: vgchange has exited, and systemd removes the
// cgroup a moment later. A probe's LVM report of that
// VG would wait for the VG's lock anyway, and would first scan every
// block device beside the activation the guests wait for, slowing it
// (docs/boot.md). So keel probes once, after it, and runs nothing lvm2 is
// already running.
//
// lvm2 activates a stacked VG (vdovg on vdosplit/vdolv) only once the
// lower VG's activation has made its LVs and udev has handled their
// uevents: 69-dm-lvm.rules runs pvscan for the new PV and starts
// lvm-activate-<vg>.service from the uevent's RUN. Between the two
// activations no process of lvm2's may run, but udev's queue is not empty
// (probes.UdevBusy), so keel also waits, at most udevSettleMax, for udev
// to be done before it decides that lvm2 has nothing left to start. What
// cannot be read is not waited on.
//
// activating, when not nil, is told the declared VGs lvm2 is activating
// when the wait starts, and nil when it ends. started, when not nil, is
// called each time lvm2 starts activating a
// declared VG keel has not seen it activate before.
func (w Watch) WaitForLVM(ctx context.Context, deadline time.Time, activating func(vgs []string), started func()) {
	fsys := w.Source.FS
	declared := func(vg string) bool {
		_, ok := w.Desired.VolumeGroups[vg]
		return ok
	}
	wake, wakeBy := w.Wake, "inotify"
	if wake != nil {
		for _, p := range probes.ActivationWatchPaths() {
			if err := wake.Add(p); err != nil {
				w.log().Debug("looking on a timer", "err", err)
				wake = nil
				break
			}
		}
	}
	if wake == nil {
		wakeBy = "timer"
	}
	// watched: the units' cgroup.events files Wake watches.
	watched := map[string]bool{}
	looks := 0
	var (
		since    time.Time      // when keel began to wait on lvm2; zero if it has not
		running  map[int]string // lvm2's vgchange processes of declared VGs, by PID
		scanned  time.Time      // the last look at all of /proc
		settling time.Time      // when keel began to wait for udev's queue; zero if not
		// populated: the VGs whose unit has been seen with a process.
		populated = map[string]bool{}
		// seen: the VGs whose activation keel has seen start.
		seen = map[string]bool{}
	)
	scan := func() {
		scanned = time.Now()
		running = map[int]string{}
		acts, _ := probes.Autoactivations(fsys)
		for _, a := range acts {
			if a.VG == "" || declared(a.VG) {
				running[a.PID] = a.VG
			}
		}
	}
	for {
		looks++
		var busy []string
		units, err := probes.ActivationUnits(fsys)
		// poll: a change no watch reports may end or extend the wait.
		poll := wake == nil || err != nil
		listed, present := map[string]bool{}, map[string]bool{}
		for _, u := range units {
			if !declared(u.VG) {
				continue
			}
			listed[u.VG] = true
			present[u.Events] = true
			if wake != nil && !watched[u.Events] {
				// Looked at before the watch began: one more look soon.
				poll = true
				if wake.Add(u.Events) == nil {
					watched[u.Events] = true
				}
			}
			switch {
			case u.Procs > 0:
				populated[u.VG] = true
				busy = append(busy, u.VG)
			case u.Procs == 0 && populated[u.VG]:
				// Its vgchange has exited; systemd has yet to
				// remove the unit.
			default:
				// Starting (no process forked yet), or unreadable.
				busy = append(busy, u.VG)
			}
		}
		for vg := range populated {
			if !listed[vg] {
				delete(populated, vg)
			}
		}
		for f := range watched {
			if !present[f] {
				delete(watched, f) // the kernel ends a removed file's watch
			}
		}
		for pid := range running {
			if !probes.Running(fsys, pid) {
				delete(running, pid)
			}
		}
		if scanned.IsZero() || len(running) == 0 && len(busy) == 0 && settling.IsZero() ||
			err != nil && time.Since(scanned) >= lvmActivationScan {
			scan()
		}
		for _, vg := range running {
			busy = append(busy, vg)
			// A vgchange outside a unit keel watches: /proc has no watch.
			poll = poll || !listed[vg]
		}
		slices.Sort(busy)
		busy = slices.Compact(busy)
		fresh := false
		for _, vg := range busy {
			fresh = fresh || !seen[vg]
			seen[vg] = true
		}
		if fresh && started != nil {
			started()
		}
		switch {
		case len(busy) > 0:
			settling = time.Time{}
			if since.IsZero() {
				since = time.Now()
				w.log().Info("waiting for lvm2's autoactivation", "vgs", strings.Join(busy, ","), "woken_by", wakeBy)
				if activating != nil {
					activating(busy)
				}
			}
		case probes.UdevBusy(fsys) && (settling.IsZero() || time.Since(settling) < udevSettleMax):
			if settling.IsZero() {
				settling = time.Now()
			}
		case !settling.IsZero() && !probes.UdevBusy(fsys):
			// udev is done: one more look, for the activation its last
			// uevent started, before ending.
			settling = time.Time{}
			continue
		default:
			if !since.IsZero() {
				w.log().Info("lvm2's autoactivation ended", "waited", time.Since(since).Round(time.Millisecond).String(), "looks", looks)
				if activating != nil {
					activating(nil)
				}
			}
			return
		}
		now := time.Now()
		if !now.Before(deadline) {
			return
		}
		sleep := lvmActivationTick
		if !poll {
			sleep = lvmActivationFallback
		}
		sleep = min(sleep, deadline.Sub(now))
		if !settling.IsZero() {
			sleep = min(sleep, max(settling.Add(udevSettleMax).Sub(now), 0))
		}
		var woken <-chan struct{}
		if wake != nil {
			woken = wake.C()
		}
		t := time.NewTimer(sleep)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-woken:
			t.Stop()
		case <-t.C:
		}
	}
}

// earlyReportGrace bounds how long keel activate waits, once lvm2's
// activation has ended, for the report it started beside it: it began
// before lvm2's last activation, so it normally ends first, and one that
// does not (a device that does not answer its label read) leaves the
// decision to the probe pass, which knows what to do about such a device
// (stuckSuspended).
const earlyReportGrace = 2 * time.Second

// EarlyReport is an activation report (probes.ReadActivationReport) that
// keel activate starts each time lvm2 starts to activate a declared VG:
// the metadata of every VG lvm2 activates is then read while lvm2
// activates it, and what is left after lvm2's end is to read which
// devices device-mapper holds. The newest start replaces the one before.
type EarlyReport struct {
	cancel  context.CancelFunc
	done    chan struct{}
	started time.Time
	config  *probes.LVMConfigRead
	rep     *probes.ActivationReport // set before done is closed
	err     error                    // set before done is closed
}

// StartEarlyReport starts an activation report of src in the background,
// replacing prev (nil for the first of a wait): prev's report is ended,
// and LVM's configuration, which the first began to read with ctx, is
// read once for all of them. Watch.Confirm waits for it, Cancel ends it.
func StartEarlyReport(ctx context.Context, src hostio.Source, prev *EarlyReport) *EarlyReport {
	var config *probes.LVMConfigRead
	if prev != nil {
		prev.Cancel()
		config = prev.config
	} else {
		config = probes.StartLVMConfigRead(ctx, src)
	}
	rctx, cancel := context.WithCancel(ctx)
	e := &EarlyReport{cancel: cancel, done: make(chan struct{}), started: time.Now(), config: config}
	go func() {
		defer close(e.done)
		e.rep, e.err = probes.ReadActivationReport(rctx, src, config)
	}()
	return e
}

// Cancel ends the report if it still runs.
func (e *EarlyReport) Cancel() { e.cancel() }

// Confirm returns the activation plan and true when e's report and
// device-mapper's devices now (probes.ProbeActivation) show every declared
// VG active, and false otherwise: the probe pass that follows decides
// then, as it does without e. It is the same rule as the pass's
// (activation.Compute) on a model that lacks only what the rule does not
// read.
func (w Watch) Confirm(ctx context.Context, e *EarlyReport) (activation.Plan, bool) {
	defer e.cancel()
	start := time.Now()
	select {
	case <-e.done:
	case <-ctx.Done():
		return activation.Plan{}, false
	case <-time.After(earlyReportGrace):
		w.log().Info("the report started beside lvm2's activation has not ended; probing", "started", since(e.started))
		return activation.Plan{}, false
	}
	if e.err != nil {
		w.log().Info("the report started beside lvm2's activation failed; probing", "err", e.err)
		return activation.Plan{}, false
	}
	lvs := e.rep.LVs()
	h, err := probes.ProbeActivation(ctx, w.Source, e.rep)
	if err != nil {
		w.log().Info("reading device-mapper after lvm2's activation failed; probing", "err", err)
		return activation.Plan{}, false
	}
	order, err := activation.Compute(w.Desired, h)
	if err != nil {
		return activation.Plan{}, false
	}
	if !order.AllActive() {
		w.log().Info("not every declared VG is active after lvm2's activation; probing",
			"blocked", strings.Join(append(order.Blocked(), order.Absent()...), "; "))
		return activation.Plan{}, false
	}
	w.log().Info("declared stack active after lvm2's activation", "lvs", lvs,
		"report_started", since(e.started), "took", since(start))
	return order, true
}

// since is the time since start, rounded to the millisecond for a log line.
func since(start time.Time) string { return time.Since(start).Round(time.Millisecond).String() }

// Report prints a line per VG of order on out ("active   vg X", or
// "absent   vg X: why") and logs a warning for each absent one, as keel
// activate and keel-boot end; it returns how many are active. An absent VG
// is not an error here: no wait would make it appear, and keel check
// reports a VG that should exist (vg.missing).
func Report(log hclog.Logger, out io.Writer, order activation.Plan) int {
	active := 0
	for _, s := range order.Steps {
		if s.Status == activation.Absent {
			log.Warn("declared VG does not exist", "vg", s.VG, "reason", s.Reason)
			fmt.Fprintf(out, "absent   vg %s: %s\n", s.VG, s.Reason)
			continue
		}
		active++
		fmt.Fprintf(out, "active   vg %s\n", s.VG)
	}
	return active
}
