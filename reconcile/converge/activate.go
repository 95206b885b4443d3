package converge

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/probes/shell"
	"github.com/keel-storage/keel/reconcile/activation"
	"github.com/keel-storage/keel/reconcile/apply/executor"
	"github.com/keel-storage/keel/reconcile/bootwatch"
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
	// Wake, when set, wakes the wait for lvm2's own activation when an
	// activation unit starts or empties (bootwatch.Watch.Wake); without
	// it the wait looks on a timer.
	Wake bootwatch.Waker
	// Waited, when set, is called once, before the first probe: the wait
	// for lvm2's own activation is over (keel activate restores its CPU
	// priority then).
	Waited func()
	// Confirmed, when set, is told the activation plan once, when the
	// declared stack is seen up right after lvm2's own activation of it,
	// before the probe pass that follows (keel activate tells systemd
	// READY then; bootwatch.Watch.Confirm). Activate goes on as without it: the pass,
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
		var early *bootwatch.EarlyReport
		var started func()
		if round == 0 && o.Confirmed != nil {
			started = func() {
				early = bootwatch.StartEarlyReport(ctx, l.source, early)
			}
		}
		l.watch(o.Wake).WaitForLVM(ctx, o.Deadline, o.LVMActivating, started)
		if round == 0 && o.Waited != nil {
			o.Waited()
		}
		if early != nil {
			if order, ok := l.watch(nil).Confirm(ctx, early); ok {
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

// watch is the watch of lvm2's boot activation of the desired state in
// force, woken by wake (nil: on a timer).
func (l *Loop) watch(wake bootwatch.Waker) bootwatch.Watch {
	return bootwatch.Watch{Source: l.source, Desired: l.desired, Log: l.log, Wake: wake}
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
