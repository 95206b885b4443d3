package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/keel-storage/keel/internal/bootunit"
	"github.com/keel-storage/keel/internal/logging"
	"github.com/keel-storage/keel/internal/notify"
	"github.com/keel-storage/keel/probes"
	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/shell"
	"github.com/keel-storage/keel/reconcile/activation"
	"github.com/keel-storage/keel/reconcile/apply/lvmconf"
	"github.com/keel-storage/keel/reconcile/bootwatch"
	"github.com/keel-storage/keel/reconcile/converge"
	"github.com/keel-storage/keel/reconcile/plan"
	"github.com/keel-storage/keel/schema/spec"
)

// runActivate implements keel activate. Exit 0: every declared VG is
// active (READY sent); 1: the stack is incomplete when --timeout runs out
// (each missing piece named), or the desired state is invalid; 2: keel
// could not run (probe failed, bad flags).
func runActivate(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("activate", "",
		"Brings the declared stack up in its stacking order: waits while lvm2's own autoactivation",
		"of a declared VG runs, re-applies lvm.conf and the bcache tunables (live actions only;",
		"nothing is created or destroyed), waits for the declared PVs, activates the lower VGs and",
		"VDO pools, makes LVM scan the PVs on their LVs, activates the VGs stacked on them, rewrites",
		"keel's udev rules if they drifted, and tells systemd READY. When lvm2's own activation has",
		"brought every declared VG up, it tells READY as soon as device-mapper shows that, before",
		"its probe pass; with --leave-pass-to-daemon it then ends, leaving that pass to keel.service.",
		"Activation commands are never killed: past --timeout, with one still running, keel tells",
		"systemd READY so the guests start, and waits for it. An invalid desired state falls back to",
		"the last one that loaded (/var/lib/keel/last-good-desired.txtar), saying so.",
		"In audit mode (agent.mode \"audit\" in the desired state, or --audit) it changes no setting:",
		"no lvm.conf edit, no bcache tunable, no udev rule; it only runs lvm2's own vgchange -aay.",
		"The shipped unit starts /usr/libexec/keel/keel-boot with these flags: it tells READY itself",
		"when lvm2 brought up the desired state keel last validated, and execs keel activate otherwise.",
		"Without --node keel must run as root.",
		"Exit status: 0 stack up, 1 stack incomplete at the timeout (each missing PV named), 2 could",
		"not run (bad flags, not root, missing desired state, invalid with no last good one, failed probe).")
	var configs multiFlag
	desiredFlag(fs, &configs)
	node := fs.String("node", "", "say what activation would do on the node `SNAPSHOT`; run nothing")
	timeout := fs.Duration("timeout", 2*time.Minute, "hold the units ordered after keel-activate no longer than this")
	poll := fs.Duration("poll", time.Second, "re-probe this often while waiting for devices")
	lvmConf := fs.String("lvm-conf", lvmconf.DefaultPath, "the lvm.conf `FILE` to keep")
	noRules := fs.Bool("no-udev-rules", false, "do not rewrite keel's udev rules when they drift")
	leavePass := fs.Bool("leave-pass-to-daemon", false, "after READY told on lvm2's own activation, end without the probe pass, the live settings and the udev rules when keel.service is enabled: its first pass does them")
	auditFlag := fs.Bool("audit", false, "activate as lvm2's autoactivation does and change no setting (as agent.mode \"audit\")")
	waitNice := fs.Int("wait-nice", 0, "wait for lvm2's own activation at CPU priority nice `N` (the unit: 19), then go on at normal priority")
	level := choice(fs, "log-level", "log `level`: info, trace, debug, warn or error", "info", "trace", "debug", "warn", "error")
	if code, ok := parseArgs(fs, args, stdout, stderr); !ok {
		return code
	}
	if code := noArgs(fs, stderr); code != exitOK {
		return code
	}
	if *timeout <= 0 || *poll <= 0 {
		return usageError(fs, stderr, "--timeout and --poll must be above zero")
	}
	lvl := hclog.LevelFromString(*level)
	if *node != "" {
		return activateReplay(configs, *node, *auditFlag, stdout, stderr)
	}
	if !requireRoot("activate", args, "pass --node SNAPSHOT to see what it would do on a recorded host", stderr) {
		return exitError
	}
	// keel-activate.service has keel wait niced (--wait-nice 19), so that
	// its wait leaves the CPUs to lvm2's own activation, which the guests
	// wait for; the probe and the commands after the wait run at the
	// normal priority, until READY sent before the probe pass lets the
	// guests start (Confirmed).
	if *waitNice < 0 || *waitNice > 19 {
		return usageError(fs, stderr, "--wait-nice must be from 0 to 19")
	}
	log, sink := logging.New(logging.Options{Name: "keel-activate", Level: lvl, Stderr: stderr})
	if sink != nil {
		defer sink.Close()
	}
	niced := bootunit.WaitNice(log, *waitNice)
	// Probes are bounded (a read that hangs is retried); the commands that
	// change the host, activation above all, are not (Loop.Activate).
	src := withLVMConfigCache(hostio.Live("/", time.Minute, liveOptions()), "")
	// lvmconfig's answer does not change while lvm2 activates the VGs
	// (lvmcfgcache keys it on what it reads): asked now, beside the
	// desired state's load and the wait for lvm2's own activation, it is
	// in the cache when the probe that decides READY runs, which then runs
	// one process fewer beside its LVM report.
	go func() { _, _ = src.Runner.Run(context.Background(), probes.LVMConfigCmd()) }()
	loop := converge.New(configs, converge.Wiring{Source: src, Runner: hostio.Live("/", 0, liveOptions()).Runner,
		LVMConfPath: *lvmConf, Log: log, KeepLastGood: true, Cache: stateCache(), StateDir: stateDir()})
	if err := loop.Load(loop.Read()); err != nil {
		fmt.Fprintf(stderr, "keel activate: %s\n", loadErrorText("activate", configs, err))
		if errors.Is(err, iofs.ErrNotExist) {
			return exitError
		}
		lg, lerr := loop.LoadLastGood()
		if lerr != nil {
			log.Error("desired state invalid and no last good one", "finding", string(plan.ConfigInvalid), "err", oneLineErr(err), "last_good", lerr.Error())
			fmt.Fprintf(stderr, "keel activate: no last good desired state to fall back to: %v\n", lerr)
			return exitError
		}
		// The stack comes up as the daemon, which keeps the last good
		// desired state in force, runs it; keel check and the daemon
		// report the invalid one (config.invalid).
		log.Error("desired state invalid; activating the last good desired state", "finding", string(plan.ConfigInvalid),
			"err", oneLineErr(err), "last_good", lg.Path, "saved", lg.Saved.UTC().Format(time.RFC3339))
		fmt.Fprintf(stderr, "keel activate: using the last good desired state, saved %s in %s; fix the desired state (keel vet)\n",
			lg.Saved.UTC().Format(time.RFC3339), lg.Path)
	}
	// What comes before the activation's own clock (took): the desired
	// state's load since main started; the journal's timestamp of this
	// line against the unit's start adds the process start.
	log.Info("desired state loaded", "since_main", time.Since(mainStart).Round(time.Millisecond).String())
	audit := *auditFlag || loop.Desired().Agent.Mode == spec.AgentAudit
	if audit {
		log.Info("audit mode: lvm.conf, bcache tunables and udev rules left as they are; only lvm2's vgchange -aay runs")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	_ = notify.Status("activating the declared storage stack")
	var confirmed bool // READY sent before the probe pass (Confirmed)
	leave := *leavePass && bootunit.DaemonWillRun("/")
	if *leavePass && !leave {
		log.Info("keel.service is not enabled or is masked; keel activate makes the probe pass itself")
	}
	w := newActivationWatch(start, *timeout, watchGrace, notify.Sender{}, log, stderr)
	defer w.stop()
	wake, stopWake := bootwatch.LiveWaker(src, log)
	defer stopWake()
	out, err := loop.Activate(ctx, converge.ActivateOptions{Deadline: start.Add(*timeout), Poll: *poll, Wake: wake,
		Waiting: func(blocked []string) {
			log.Info("waiting for devices", "blocked", strings.Join(blocked, "; "))
			w.set("waiting for devices: " + strings.Join(blocked, "; "))
		},
		LVMActivating: func(vgs []string) {
			if vgs == nil {
				w.set("probing the host")
				return
			}
			w.set("waiting for lvm2's own activation of vg " + strings.Join(vgs, ", "))
		},
		Running: w.running, Audit: audit, ReturnOnConfirm: leave,
		Confirmed: func(order activation.Plan) {
			// The stack is up as lvm2 left it: the guests need not wait
			// for the probe pass, the live settings and the udev rules
			// that follow, which change nothing they read.
			confirmed = true
			took := time.Since(start).Round(time.Millisecond)
			log.Info("stack active; READY before the probe pass", "vgs", len(order.Steps), "took", took.String())
			_ = notify.Ready(fmt.Sprintf("%d declared VGs active, in %s; checking the host", len(order.Steps), took))
			if niced > 0 {
				// Back to the unit's nice: the guests start now, and
				// keel's pass must not take the CPUs from them.
				bootunit.SetGroupNice(log, niced)
			}
		},
		Waited: func() {
			if niced > 0 {
				bootunit.SetGroupNice(log, 0)
			}
		}})
	w.stop()
	if !out.Computed {
		if err == nil {
			err = errors.New("no probe of the host succeeded")
		}
		log.Error("activation failed", "err", probeErrorText(err))
		fmt.Fprintf(stderr, "keel activate: %s\n", probeErrorText(err))
		return exitError
	}
	order := out.Plan
	if !order.Done() || err != nil {
		for _, r := range order.Blocked() {
			log.Error("stack incomplete", "reason", r)
			fmt.Fprintf(stderr, "keel activate: %s\n", r)
		}
		if err != nil {
			// The last probe failed after earlier ones worked: the plan is
			// stale, so the stack is not known to be up.
			log.Error("last probe failed", "err", err)
			fmt.Fprintf(stderr, "keel activate: last probe: %s\n", probeErrorText(err))
		}
		if confirmed {
			// READY went out on what device-mapper showed after lvm2's
			// activation; the probe pass since reads the stack otherwise.
			log.Error("stack incomplete after READY", "reason", strings.Join(order.Blocked(), "; "))
		}
		_ = notify.Status("stack incomplete: " + strings.Join(order.Blocked(), "; "))
		return exitFindings
	}
	if out.Host == nil {
		// READY was told on lvm2's activation and the pass is left to
		// keel.service (--leave-pass-to-daemon).
		log.Info("probe pass, live settings and udev rules left to keel.service")
	} else if !*noRules && !audit {
		// A failure is logged, not fatal: the stack is already up.
		written, err := loop.SyncRules(ctx, out.Host)
		for _, p := range written {
			log.Info("udev rule written", "file", p)
		}
		if err != nil {
			log.Warn("udev rules", "err", err)
		}
	}
	took := time.Since(start).Round(time.Millisecond)
	active := bootwatch.Report(log, stdout, order)
	log.Info("stack active", "vgs", active, "absent", len(order.Steps)-active, "took", took.String())
	_ = notify.Ready(fmt.Sprintf("%d declared VGs active, %d absent, in %s", active, len(order.Steps)-active, took))
	return exitOK
}

// activateReplay computes the activation plan on a node snapshot and
// prints it: what keel activate would run now, and what blocks.
func activateReplay(configs []string, node string, audit bool, stdout, stderr io.Writer) int {
	cfg, _, h, code := loadAndProbe("activate", configs, node, time.Minute, stderr)
	if cfg == nil {
		return code
	}
	audit = audit || cfg.Agent.Mode == spec.AgentAudit
	order, err := activation.Compute(cfg, h)
	if err != nil {
		fmt.Fprintf(stderr, "keel activate: %v\n", err)
		return exitError
	}
	if audit {
		fmt.Fprintln(stdout, "audit mode: lvm.conf, bcache tunables and udev rules left as they are")
	} else {
		for _, a := range converge.LiveBootActions(plan.Plan(cfg, h).Actions) {
			fmt.Fprintf(stdout, "%-8s %s: %s\n", "re-apply", a.ID, a.Summary)
		}
	}
	runnable := map[string]bool{}
	for _, s := range order.Runnable() {
		runnable[s.VG] = true
	}
	for _, s := range order.Steps {
		switch {
		case s.Status == activation.Active:
			fmt.Fprintf(stdout, "%-8s vg %s (depth %d)\n", "active", s.VG, s.Depth)
		case s.Status == activation.Absent:
			fmt.Fprintf(stdout, "%-8s vg %s (depth %d): %s\n", "absent", s.VG, s.Depth, s.Reason)
		case runnable[s.VG]:
			fmt.Fprintf(stdout, "%-8s vg %s (depth %d): %s\n", "activate", s.VG, s.Depth, s.Reason)
			for _, c := range s.Commands {
				if audit && c[0] != "vgchange" {
					continue // converge.ActivateOptions.Audit
				}
				fmt.Fprintf(stdout, "         $ %s\n", shell.Join(c))
			}
		default:
			fmt.Fprintf(stdout, "%-8s vg %s (depth %d): %s\n", "blocked", s.VG, s.Depth, s.Reason)
		}
	}
	if order.Done() {
		return exitOK
	}
	if len(order.Runnable()) == 0 {
		for _, r := range order.Blocked() {
			fmt.Fprintf(stderr, "keel activate: %s\n", r)
		}
		return exitFindings
	}
	return exitOK
}

// oneLineErr is err's text on one line, for a structured log field.
func oneLineErr(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }

// activationWatch shows in systemd's STATUS= line what keel activate waits
// for and since when (systemctl status keel-activate), and holds the units
// ordered after keel-activate (the guests) no longer than the bound: when
// the bound has passed and the activation still runs (a command keel never
// kills, Loop.Activate), it tells systemd READY, so that those units start
// while keel keeps waiting. Without NOTIFY_SOCKET it only logs.
type activationWatch struct {
	notify   notify.Sender
	mu       sync.Mutex
	what     string
	since    time.Time
	command  bool
	stopOnce sync.Once
	done     chan struct{}
}

// watchTick is how often the status line is refreshed; watchGrace is how
// long after the bound the watch waits for Activate to return by itself
// (it checks the deadline once per poll) before it releases the guests.
const (
	watchTick  = 5 * time.Second
	watchGrace = 2 * time.Second
)

// newActivationWatch starts the watch of an activation that began at start
// with bound; it releases the guests grace after the bound.
func newActivationWatch(start time.Time, bound, grace time.Duration, n notify.Sender, log hclog.Logger, stderr io.Writer) *activationWatch {
	w := &activationWatch{notify: n, what: "probing the host", since: start, done: make(chan struct{})}
	go w.loop(start, bound, grace, log, stderr)
	return w
}

// set says what the activation waits for now.
func (w *activationWatch) set(what string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if what != w.what {
		w.what, w.since = what, time.Now()
	}
	w.command = false
}

// running is ActivateOptions.Running.
func (w *activationWatch) running(argv []string) {
	if argv == nil {
		w.set("probing the host")
		return
	}
	w.set("running " + shell.Join(argv) + " (never killed)")
	w.mu.Lock()
	w.command = true
	w.mu.Unlock()
}

func (w *activationWatch) status() (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Sprintf("%s for %s", w.what, time.Since(w.since).Round(time.Second)), w.command
}

func (w *activationWatch) stop() { w.stopOnce.Do(func() { close(w.done) }) }

func (w *activationWatch) loop(start time.Time, bound, grace time.Duration, log hclog.Logger, stderr io.Writer) {
	tick := time.NewTicker(watchTick)
	defer tick.Stop()
	release := time.NewTimer(time.Until(start.Add(bound + grace)))
	defer release.Stop()
	released := false
	for {
		select {
		case <-w.done:
			return
		case <-tick.C:
			st, _ := w.status()
			if released {
				st = "guests released at the bound; " + st
			}
			_ = w.notify.Status(st)
		case <-release.C:
			st, command := w.status()
			released = true
			msg := fmt.Sprintf("past its bound of %s: units ordered after keel-activate may start; still %s", bound, st)
			log.Warn("activation past its bound; READY so that the guests start", "bound", bound.String(), "waiting", st, "command", command)
			fmt.Fprintf(stderr, "keel activate: %s\n", msg)
			_ = w.notify.Ready(msg)
		}
	}
}
