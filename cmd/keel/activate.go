package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/keel-storage/keel/cmd/keel/internal/agent"
	"github.com/keel-storage/keel/cmd/keel/internal/logging"
	"github.com/keel-storage/keel/cmd/keel/internal/notify"
	"github.com/keel-storage/keel/probes"
	"github.com/keel-storage/keel/reconcile"
	"github.com/keel-storage/keel/reconcile/activation"
	"github.com/keel-storage/keel/reconcile/executor"
	"github.com/keel-storage/keel/reconcile/lvmconf"
)

func init() {
	register(command{name: "activate", summary: "bring the declared stack up bottom-up at boot (keel-activate.service)", run: runActivate})
}

// maxCommandRuns bounds how often keel activate runs one activation
// command: a vgchange that leaves its VG inactive twice will not do better
// a third time.
const maxCommandRuns = 2

// runActivate implements keel activate. Exit 0: every declared VG is
// active (READY sent); 1: the stack is incomplete when --timeout runs out
// (each missing piece named), or the desired state is invalid; 2: keel
// could not run (probe failed, bad flags).
func runActivate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("activate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var configs multiFlag
	desiredFlag(fs, &configs)
	node := fs.String("node", "", "say what activation would do on the node `SNAPSHOT`; run nothing")
	timeout := fs.Duration("timeout", 2*time.Minute, "give up when the stack is not up after this long")
	poll := fs.Duration("poll", time.Second, "re-probe this often while waiting for devices")
	lvmConf := fs.String("lvm-conf", lvmconf.DefaultPath, "the lvm.conf to keep")
	noRules := fs.Bool("no-udev-rules", false, "do not rewrite keel's udev rules when they drift")
	level := fs.String("log-level", "info", "log `level`: trace, debug, info, warn, error")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: keel activate [-c PATH] [--timeout 2m] [--node SNAPSHOT]")
		fmt.Fprintln(stderr, "\nBrings the declared stack up in its stacking order: re-applies lvm.conf and the bcache")
		fmt.Fprintln(stderr, "tunables (live actions only; nothing is created or destroyed), waits for the declared PVs,")
		fmt.Fprintln(stderr, "activates the lower VGs and VDO pools, makes LVM scan the PVs on their LVs, activates the")
		fmt.Fprintln(stderr, "VGs stacked on them, rewrites keel's udev rules if they drifted, and tells systemd READY.")
		fmt.Fprintln(stderr, "Exit status: 0 stack up, 1 stack incomplete at the timeout (each missing PV named) or")
		fmt.Fprintln(stderr, "invalid desired state, 2 could not run.")
		fs.PrintDefaults()
	}
	if code, ok := parseArgs(fs, args, exitError); !ok {
		return code
	}
	lvl := hclog.LevelFromString(*level)
	if fs.NArg() != 0 || lvl == hclog.NoLevel || *timeout <= 0 || *poll <= 0 {
		fs.Usage()
		return exitError
	}
	if *node != "" {
		return activateReplay(configs, *node, stdout, stderr)
	}
	log, sink := logging.New(logging.Options{Name: "keel-activate", Level: lvl, Stderr: stderr})
	if sink != nil {
		defer sink.Close()
	}
	src := probes.Live("/", time.Minute)
	a := agent.New(configs, agent.Wiring{Source: src, LVMConfPath: *lvmConf, Log: log})
	if err := a.Load(); err != nil {
		fmt.Fprintf(stderr, "keel activate: %s\n", describeLoadError(err))
		return exitFindings
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	act := &activator{a: a, src: src, log: log, poll: *poll, runs: map[string]int{}}
	start := time.Now()
	_ = notify.Status("activating the declared storage stack")
	plan, computed, err := act.run(ctx, start.Add(*timeout))
	if !computed {
		if err == nil {
			err = errors.New("no probe of the host succeeded")
		}
		log.Error("activation failed", "err", err)
		fmt.Fprintf(stderr, "keel activate: %v\n", err)
		return exitError
	}
	if !plan.Done() || err != nil {
		for _, r := range plan.Blocked() {
			log.Error("stack incomplete", "reason", r)
			fmt.Fprintf(stderr, "keel activate: %s\n", r)
		}
		if err != nil {
			// The last probe failed after earlier ones worked: the plan is
			// stale, so the stack is not known to be up.
			log.Error("last probe failed", "err", err)
			fmt.Fprintf(stderr, "keel activate: last probe: %v\n", err)
		}
		_ = notify.Status("stack incomplete: " + strings.Join(plan.Blocked(), "; "))
		return exitFindings
	}
	if !*noRules {
		act.syncRules(ctx)
	}
	took := time.Since(start).Round(time.Millisecond)
	log.Info("stack active", "vgs", len(plan.Steps), "took", took.String())
	_ = notify.Ready(fmt.Sprintf("%d declared VGs active in %s", len(plan.Steps), took))
	for _, s := range plan.Steps {
		fmt.Fprintf(stdout, "active   vg %s\n", s.VG)
	}
	return exitOK
}

// activator is one keel activate run against the live host.
type activator struct {
	a    *agent.Agent
	src  probes.Source
	log  hclog.Logger
	poll time.Duration
	// runs counts each activation command (joined argv) run so far.
	runs map[string]int
	host *probes.Host
}

// run loops until the stack is up or the deadline passes: probe, re-apply
// the live lvm.conf and bcache actions, run the activation commands of the
// lowest runnable VGs, wait for devices. It returns the last plan, whether
// one was computed at all, and the last probe error (at boot, lvm can fail
// while devices are still appearing: that is waited out like a missing PV).
func (x *activator) run(ctx context.Context, deadline time.Time) (plan activation.Plan, computed bool, probeErr error) {
	cfg := x.a.Desired()
	for pass := 0; ; pass++ {
		h, err := probes.Probe(ctx, x.src)
		if err == nil && x.applyLive(ctx, h) > 0 {
			// lvm.conf or sysfs changed what LVM and bcache show.
			h, err = probes.Probe(ctx, x.src)
		}
		ran := 0
		if err != nil {
			probeErr = err
			x.log.Warn("probe failed; retrying", "err", err)
		} else {
			probeErr, x.host = nil, h
			var cerr error
			if plan, cerr = activation.Compute(cfg, h); cerr != nil {
				return plan, false, cerr
			}
			computed = true
			if plan.Done() {
				return plan, true, nil
			}
			ran = x.runCommands(ctx, plan)
		}
		if ran > 0 {
			continue
		}
		if !time.Now().Before(deadline) {
			return plan, computed, probeErr
		}
		if computed && (pass == 0 || pass%10 == 0) {
			x.log.Info("waiting for devices", "blocked", strings.Join(plan.Blocked(), "; "))
		}
		select {
		case <-ctx.Done():
			return plan, computed, ctx.Err()
		case <-time.After(x.poll):
		}
	}
}

// runCommands runs the commands of the runnable steps, each at most
// maxCommandRuns times per keel activate, and returns how many ran.
func (x *activator) runCommands(ctx context.Context, plan activation.Plan) int {
	ran := 0
	for _, s := range plan.Runnable() {
		for _, argv := range s.Commands {
			key := strings.Join(argv, " ")
			if x.runs[key] >= maxCommandRuns {
				continue
			}
			x.runs[key]++
			ran++
			x.log.Info("activating", "vg", s.VG, "depth", s.Depth, "command", key, "why", s.Reason)
			if err := x.exec(ctx, argv); err != nil {
				x.log.Warn("activation command failed", "vg", s.VG, "command", key, "err", err)
			}
		}
	}
	return ran
}

func (x *activator) exec(ctx context.Context, argv []string) error {
	c := probes.Cmd{Name: argv[0], Args: argv[1:]}
	res, err := x.src.Runner.Run(ctx, c)
	if err != nil {
		return err
	}
	return res.Err(c)
}

// liveBootActions keeps the planner's actions keel activate may run at
// boot: live lvm.conf edits and bcache sysfs writes. Nothing that creates
// (commands), wipes, or needs maintenance.
func liveBootActions(actions []reconcile.Action) []reconcile.Action {
	var out []reconcile.Action
	for _, a := range actions {
		if a.Class == reconcile.Live && (a.Kind == reconcile.KindLVMConf || a.Kind == reconcile.KindSysfs) {
			out = append(out, a)
		}
	}
	return out
}

// applyLive re-applies lvm.conf and the bcache tunables through the
// executor and returns how many actions converged.
func (x *activator) applyLive(ctx context.Context, h *probes.Host) int {
	res := reconcile.Plan(x.a.Desired(), h)
	acts := liveBootActions(res.Actions)
	if len(acts) == 0 {
		return 0
	}
	x.a.Exec.SetMode(false, false)
	rep, err := x.a.Exec.ApplySubset(ctx, acts, res.Findings)
	if err != nil {
		x.log.Warn("re-applying lvm.conf and bcache tunables", "err", err)
	}
	for _, r := range rep.Results {
		x.log.Info("boot action", "id", r.Action.ID, "status", string(r.Status), "detail", r.Detail)
	}
	return rep.Count(executor.Converged)
}

// syncRules rewrites keel's udev rules when they differ from the desired
// state; a failure is logged, not fatal: the stack is already up.
func (x *activator) syncRules(ctx context.Context) {
	files, err := activation.Rules(x.a.Desired(), x.host, linkResolver(x.src.FS))
	if err != nil {
		x.log.Warn("udev rules", "err", err)
		return
	}
	for _, d := range activation.Compare(files, x.src.FS.ReadFile) {
		x.log.Warn("udev rule drift", "finding", d.FindingID(), "file", d.File.Path, "message", d.Message())
	}
	written, err := installRules(ctx, files, "/", x.src.Runner)
	for _, p := range written {
		x.log.Info("udev rule written", "file", p)
	}
	if err != nil {
		x.log.Warn("udev rules", "err", err)
	}
}

// activateReplay computes the activation plan on a node snapshot and
// prints it: what keel activate would run now, and what blocks.
func activateReplay(configs []string, node string, stdout, stderr io.Writer) int {
	cfg, _, h, code := loadAndProbe("activate", configs, node, time.Minute, stderr)
	if cfg == nil {
		return code
	}
	plan, err := activation.Compute(cfg, h)
	if err != nil {
		fmt.Fprintf(stderr, "keel activate: %v\n", err)
		return exitFindings
	}
	for _, a := range liveBootActions(reconcile.Plan(cfg, h).Actions) {
		fmt.Fprintf(stdout, "%-8s %s: %s\n", "re-apply", a.ID, a.Summary)
	}
	runnable := map[string]bool{}
	for _, s := range plan.Runnable() {
		runnable[s.VG] = true
	}
	for _, s := range plan.Steps {
		switch {
		case s.Status == activation.Active:
			fmt.Fprintf(stdout, "%-8s vg %s (depth %d)\n", "active", s.VG, s.Depth)
		case runnable[s.VG]:
			fmt.Fprintf(stdout, "%-8s vg %s (depth %d): %s\n", "activate", s.VG, s.Depth, s.Reason)
			for _, c := range s.Commands {
				fmt.Fprintf(stdout, "         $ %s\n", strings.Join(c, " "))
			}
		default:
			fmt.Fprintf(stdout, "%-8s vg %s (depth %d): %s\n", "blocked", s.VG, s.Depth, s.Reason)
		}
	}
	if plan.Done() {
		return exitOK
	}
	if len(plan.Runnable()) == 0 {
		for _, r := range plan.Blocked() {
			fmt.Fprintf(stderr, "keel activate: %s\n", r)
		}
		return exitFindings
	}
	return exitOK
}
