package converge

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/keel-storage/keel/probes"
	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/probes/shell"
	"github.com/keel-storage/keel/reconcile/activation"
	"github.com/keel-storage/keel/reconcile/apply/executor"
	"github.com/keel-storage/keel/reconcile/plan"
)

// MaxActivationRuns bounds how often Activate runs one activation command:
// a vgchange that leaves its VG inactive twice will not do better a third
// time.
const MaxActivationRuns = 2

// ActivateOptions tune Activate.
type ActivateOptions struct {
	// Deadline is when Activate gives up waiting for devices.
	Deadline time.Time
	// Poll is how often it probes again while devices are missing (1s).
	Poll time.Duration
	// Waiting, when set, is told what blocks the stack while Activate
	// waits (on the first wait and every tenth after).
	Waiting func(blocked []string)
	// Running, when set, is told each activation command as it starts and
	// called with nil when the commands of a round are done, so the
	// caller can show what the activation waits for (systemd's STATUS=).
	Running func(argv []string)
	// LVMActivating, when set, is told the declared VGs lvm2's own event
	// autoactivation is activating when Activate starts to wait for it,
	// and nil when the wait ends.
	LVMActivating func(vgs []string)
	// Waited, when set, is called once, before the first probe: the wait
	// for lvm2's own activation is over (keel activate restores its CPU
	// priority then).
	Waited func()
	// Confirmed, when set, is told the activation plan once, when the
	// declared stack is seen up right after lvm2's own activation of it,
	// before the probe pass that follows (keel activate tells systemd
	// READY then; confirmEarly). Activate goes on as without it: the pass,
	// the live lvm.conf and bcache actions, and any activation still due.
	Confirmed func(activation.Plan)
	// ReturnOnConfirm makes Activate return once Confirmed is told, with
	// the plan and no Host: the probe pass, the live lvm.conf and bcache
	// actions and the udev rules are left to the caller (keel activate
	// --leave-pass-to-daemon: keel.service's first pass, which systemd
	// starts at that READY), so that one pass of keel's, not two, runs
	// beside the guests' start.
	ReturnOnConfirm bool
	// Audit (agent.mode "audit", keel activate --audit) activates as
	// lvm2's own boot activation does and changes no setting: the live
	// lvm.conf and bcache actions are not applied, and of the activation
	// commands only vgchange -aay runs: lvm2's own autoactivation command
	// (udev/69-dm-lvm.rules.in starts lvm-activate-<vg>.service with
	// "vgchange -aay --autoactivation event <vg>"), which loads
	// device-mapper tables from the committed metadata and writes none.
	// pvscan --cache of a PV on an LV is left out: lvm2's udev rule skips
	// such a PV unless keel's own rule (LVM_PVSCAN_ON_LVS) says otherwise.
	Audit bool
}

// Activation is the outcome of Activate.
type Activation struct {
	// Plan is the newest activation plan; Computed says whether any probe
	// succeeded so that a plan exists at all.
	Plan     activation.Plan
	Computed bool
	// Host is the probe the newest plan was made on.
	Host *model.Host
}

// Activate brings the declared stack up in its stacking order (keel
// activate at boot): each round it probes, re-applies the live lvm.conf
// edits and bcache tunables through the executor, then runs the
// activation commands of the lowest runnable VGs, also through the
// executor (and its argv allowlist), each at most MaxActivationRuns times;
// when nothing can run it waits Poll for devices to appear. It returns when
// the stack is up, when the deadline passes, or when ctx ends; the error is
// the last probe's (at boot, lvm can fail while devices still appear).
//
// An activation command is never cut short: not by the deadline, which
// only ends the wait for devices, nor by ctx, and the loop's Runner should
// bound it by no timeout. A VDO pool replaying its recovery journal after
// a power cut holds vgchange in the resume ioctl for minutes, and a thin
// pool's thin_check of large metadata runs as long; a killed vgchange
// leaves the stack half up and is no faster the second time.
func (l *Loop) Activate(ctx context.Context, o ActivateOptions) (Activation, error) {
	if l.desired == nil {
		return Activation{}, ErrNoDesiredState
	}
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	// keel activate reads the desired state, so it records the first sight
	// of its absent names too (it removes nothing itself).
	l.mem = l.loadMemory()
	runs := map[string]int{}
	var out Activation
	var probeErr error
	for round := 0; ; round++ {
		var early *earlyReport
		var started func()
		if round == 0 && o.Confirmed != nil {
			started = func() {
				if early != nil {
					early.cancel()
				}
				early = l.startEarlyReport(ctx)
			}
		}
		l.waitForLVMActivation(ctx, o, started)
		if round == 0 && o.Waited != nil {
			o.Waited()
		}
		if early != nil {
			if order, ok := l.confirmEarly(ctx, early); ok {
				o.Confirmed(order)
				if o.ReturnOnConfirm {
					return Activation{Plan: order, Computed: true}, nil
				}
			}
		}
		probeStart := time.Now()
		h, err := l.Probe(ctx)
		if round == 0 && err == nil {
			l.log.Info("host probed", "took", time.Since(probeStart).Round(time.Millisecond).String())
		}
		if err == nil && !o.Audit && l.applyLive(ctx, h) > 0 {
			// lvm.conf or sysfs changed what LVM and bcache show.
			h, err = l.Probe(ctx)
		}
		ran := 0
		if err != nil {
			probeErr = err
			l.log.Warn("probe failed; retrying", "err", err)
		} else {
			probeErr, out.Host = nil, h
			order, cerr := activation.Compute(l.desired, h)
			if cerr != nil {
				return Activation{}, cerr
			}
			out.Plan, out.Computed = order, true
			if order.Done() {
				return out, nil
			}
			ran = l.runActivation(ctx, order, runs, o.Running, o.Audit)
		}
		if ran > 0 {
			continue
		}
		if !time.Now().Before(o.Deadline) {
			return out, probeErr
		}
		if out.Computed && o.Waiting != nil && round%10 == 0 {
			o.Waiting(out.Plan.Blocked())
		}
		select {
		case <-ctx.Done():
			return out, ctx.Err()
		case <-time.After(o.Poll):
		}
	}
}

// How keel watches lvm2's own autoactivation (waitForLVMActivation): every
// lvmActivationTick it lists the activation units' cgroups (one
// directory) and looks at the processes it already waits on (one file
// each), so that it probes within a tick of lvm2's end; all of /proc, a
// file per process, it reads every lvmActivationScan, and before it ends.
const (
	lvmActivationTick = 25 * time.Millisecond
	lvmActivationScan = 200 * time.Millisecond
	// udevSettleMax bounds the wait for udev's queue to empty when no
	// activation of lvm2's runs: the uevents of LVs just activated are
	// what starts lvm2's activation of a VG stacked on them.
	udevSettleMax = 3 * time.Second
)

// waitForLVMActivation waits, until o.Deadline, while lvm2's own event
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
// started, when not nil, is called each time lvm2 starts activating a
// declared VG keel has not seen it activate before.
func (l *Loop) waitForLVMActivation(ctx context.Context, o ActivateOptions, started func()) {
	fsys := l.source.FS
	declared := func(vg string) bool {
		_, ok := l.desired.VolumeGroups[vg]
		return ok
	}
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
		var busy []string
		units, err := probes.ActivationUnits(fsys)
		listed := map[string]bool{}
		for _, u := range units {
			if !declared(u.VG) {
				continue
			}
			listed[u.VG] = true
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
				l.log.Info("waiting for lvm2's autoactivation", "vgs", strings.Join(busy, ","))
				if o.LVMActivating != nil {
					o.LVMActivating(busy)
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
				l.log.Info("lvm2's autoactivation ended", "waited", time.Since(since).Round(time.Millisecond).String())
				if o.LVMActivating != nil {
					o.LVMActivating(nil)
				}
			}
			return
		}
		if !time.Now().Before(o.Deadline) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(lvmActivationTick):
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

// earlyReport is an activation report (probes.ReadActivationReport) that
// keel activate starts each time lvm2 starts to activate a declared VG:
// the metadata of every VG lvm2 activates is then read while lvm2
// activates it, and what is left after lvm2's end is to read which
// devices device-mapper holds. The newest start replaces the one before.
type earlyReport struct {
	cancel  context.CancelFunc
	done    chan struct{}
	started time.Time
	rep     *probes.ActivationReport // set before done is closed
	err     error                    // set before done is closed
}

func (l *Loop) startEarlyReport(ctx context.Context) *earlyReport {
	ctx, cancel := context.WithCancel(ctx)
	e := &earlyReport{cancel: cancel, done: make(chan struct{}), started: time.Now()}
	go func() {
		defer close(e.done)
		e.rep, e.err = probes.ReadActivationReport(ctx, l.source)
	}()
	return e
}

// confirmEarly returns the activation plan and true when e's report and
// device-mapper's devices now (probes.ProbeActivation) show every declared
// VG active, and false otherwise: the probe pass that follows decides
// then, as it does without e. It is the same rule as the pass's
// (activation.Compute) on a model that lacks only what the rule does not
// read.
func (l *Loop) confirmEarly(ctx context.Context, e *earlyReport) (activation.Plan, bool) {
	defer e.cancel()
	start := time.Now()
	select {
	case <-e.done:
	case <-ctx.Done():
		return activation.Plan{}, false
	case <-time.After(earlyReportGrace):
		l.log.Info("the report started beside lvm2's activation has not ended; probing", "started", Since(e.started))
		return activation.Plan{}, false
	}
	if e.err != nil {
		l.log.Info("the report started beside lvm2's activation failed; probing", "err", e.err)
		return activation.Plan{}, false
	}
	lvs := e.rep.LVs()
	h, err := probes.ProbeActivation(ctx, l.source, e.rep)
	if err != nil {
		l.log.Info("reading device-mapper after lvm2's activation failed; probing", "err", err)
		return activation.Plan{}, false
	}
	order, err := activation.Compute(l.desired, h)
	if err != nil {
		return activation.Plan{}, false
	}
	if !order.AllActive() {
		l.log.Info("not every declared VG is active after lvm2's activation; probing",
			"blocked", strings.Join(append(order.Blocked(), order.Absent()...), "; "))
		return activation.Plan{}, false
	}
	l.log.Info("declared stack active after lvm2's activation", "lvs", lvs,
		"report_started", Since(e.started), "took", Since(start))
	return order, true
}

// LiveBootActions keeps the planner's actions keel activate may run at
// boot: live lvm.conf edits and bcache sysfs writes. Nothing that creates
// (commands), wipes, or needs maintenance.
func LiveBootActions(actions []plan.Action) []plan.Action {
	var out []plan.Action
	for _, a := range actions {
		if a.Class == plan.Live && (a.Kind == plan.KindLVMConf || a.Kind == plan.KindSysfs) {
			out = append(out, a)
		}
	}
	return out
}

// applyLive re-applies lvm.conf and the bcache tunables and returns how
// many actions converged.
func (l *Loop) applyLive(ctx context.Context, h *model.Host) int {
	res := l.planOn(h)
	acts := LiveBootActions(res.Actions)
	if len(acts) == 0 {
		return 0
	}
	rep, err := l.exec.Apply(ctx, acts, res.Findings, executor.Mode{Partial: true}, l.verifyFull)
	if err != nil {
		l.log.Warn("re-applying lvm.conf and bcache tunables", "err", err)
	}
	for _, r := range rep.Results {
		l.log.Info("boot action", "id", r.Action.ID, "status", string(r.Status), "detail", r.Detail)
	}
	return rep.Count(executor.Converged)
}

// activationActions turns the runnable steps of plan into command actions,
// leaving out commands that already ran MaxActivationRuns times, and in
// audit mode every command but lvm2's own vgchange -aay
// (ActivateOptions.Audit). They carry no remedies: the next round's probe
// and plan say whether the VG came up.
func activationActions(order activation.Plan, runs map[string]int, audit bool) []plan.Action {
	var out []plan.Action
	for _, s := range order.Runnable() {
		for i, argv := range s.Commands {
			key := strings.Join(argv, " ")
			if runs[key] >= MaxActivationRuns || (audit && argv[0] != "vgchange") {
				continue
			}
			out = append(out, plan.Action{
				ID:   fmt.Sprintf("activation.vg:%s#%d", s.VG, i),
				Kind: plan.KindCommand, Class: plan.Live, Object: s.VG,
				Summary:  fmt.Sprintf("activate vg %s (depth %d): %s", s.VG, s.Depth, s.Reason),
				Commands: [][]string{argv},
			})
		}
	}
	return out
}

// runActivation runs the activation commands of the runnable steps through
// the executor, one at a time so that running hears of each, and returns
// how many ran.
func (l *Loop) runActivation(ctx context.Context, order activation.Plan, runs map[string]int, running func([]string), audit bool) int {
	acts := activationActions(order, runs, audit)
	n := 0
	for _, a := range acts {
		if ctx.Err() != nil {
			break
		}
		n++
		runs[strings.Join(a.Commands[0], " ")]++
		l.log.Info("activating", "vg", a.Object, "command", shell.Join(a.Commands[0]), "why", a.Summary)
		if running != nil {
			running(a.Commands[0])
		}
		// Without ctx's cancel: a signal (systemd stopping the unit) ends
		// the loop between commands, never in the middle of one (Activate).
		rep, err := l.exec.Apply(context.WithoutCancel(ctx), []plan.Action{a}, nil, executor.Mode{Partial: true, Once: true}, nil)
		if err != nil {
			l.log.Warn("activation interrupted", "err", err)
		}
		for _, r := range rep.Results {
			if r.Status != executor.Converged {
				l.log.Warn("activation command failed", "vg", r.Action.Object, "status", string(r.Status), "detail", r.Detail)
			}
		}
	}
	if running != nil && n > 0 {
		running(nil)
	}
	return n
}

// SyncRules rewrites keel's udev rules under the loop's file root when they
// differ from what the desired state and h generate, through the executor
// (atomic writes, then udevadm control --reload), and returns the paths it
// wrote.
func (l *Loop) SyncRules(ctx context.Context, h *model.Host) ([]string, error) {
	if l.desired == nil {
		return nil, ErrNoDesiredState
	}
	files, err := activation.Rules(l.desired, h, LinkResolver(l.source.FS))
	if err != nil {
		return nil, fmt.Errorf("udev rules: %w", err)
	}
	for _, d := range activation.Compare(files, l.source.FS.ReadFile) {
		l.log.Warn("udev rule drift", "finding", plan.UdevRuleID(d.File.Path), "file", d.File.Path, "message", d.Message())
	}
	return installRules(ctx, l.exec, files, l.fileRoot)
}

// InstallRules writes each rules file whose content under root differs
// through a one-shot executor (atomic writes), and reloads udev's rules
// when root is "/" and anything changed. It returns the paths it wrote.
func InstallRules(ctx context.Context, files []activation.RuleFile, root string, r hostio.Runner) ([]string, error) {
	ex := executor.New(r, executor.Options{MaxAttempts: 1})
	ex.Files = executor.DirFiles(root)
	return installRules(ctx, ex, files, root)
}

func installRules(ctx context.Context, ex *executor.Executor, files []activation.RuleFile, root string) ([]string, error) {
	a := plan.Action{ID: "udev.rules:" + activation.RulesDir, Kind: plan.KindFile, Class: plan.Live,
		Object: "udev:" + activation.RulesDir, Summary: "install keel's udev rules"}
	var written []string
	for _, f := range files {
		if old, err := os.ReadFile(filepath.Join(root, f.Path)); err == nil && string(old) == f.Content {
			continue
		}
		a.Files = append(a.Files, plan.FileWrite{Path: f.Path, Content: f.Content, Mode: 0o644})
		written = append(written, f.Path)
	}
	if len(a.Files) == 0 {
		return nil, nil
	}
	if filepath.Clean(root) == "/" {
		a.Commands = [][]string{plan.UdevReload}
	}
	rep, err := ex.Apply(ctx, []plan.Action{a}, nil, executor.Mode{Partial: true}, nil)
	if err != nil {
		return nil, fmt.Errorf("udev rules: %w", err)
	}
	if r := rep.Results[0]; r.Status != executor.Converged {
		if len(r.Commands) > 0 {
			// The files were written; the reload failed.
			return written, fmt.Errorf("udev rules: reload: %s", r.Detail)
		}
		return nil, fmt.Errorf("udev rules: %s", r.Detail)
	}
	return written, nil
}

// LinkResolver resolves /dev/disk/by-… links through the probe's file
// root, so that a by-id backing device names its kernel device.
func LinkResolver(fsys hostio.FS) activation.Resolver {
	return func(p string) string {
		if !strings.HasPrefix(p, "/dev/disk/") {
			return ""
		}
		target, err := fsys.Readlink(p)
		if err != nil {
			return ""
		}
		return path.Base(target)
	}
}
