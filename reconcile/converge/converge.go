// Package converge owns every loop in which keel changes a host: probe,
// plan, execute, verify. keel apply and keel run converge the whole desired
// state (Loop.Converge), the daemon's bcache fast path writes tunables from
// sysfs alone (Loop.BcachePass), keel activate brings the declared stack up
// at boot (Loop.Activate), and keel wipe and absent LVs remove LVs safely
// (Loop.Wipe). Every mutating command goes through the executor and its
// argv allowlist, through one hostio.Runner, and every action is verified
// against a fresh reading of the host, never against what keel remembers.
//
// The loop loads the desired state too, keeping the last good one when a new
// one is invalid. Process plumbing (file watches, uevents, sd_notify,
// metrics) is the caller's: see cmd/keel/internal/daemon.
package converge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/keel-storage/keel/probes"
	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/reconcile/activation"
	"github.com/keel-storage/keel/reconcile/apply/bcache"
	"github.com/keel-storage/keel/reconcile/apply/executor"
	"github.com/keel-storage/keel/reconcile/apply/lvmconf"
	"github.com/keel-storage/keel/reconcile/apply/wipe"
	"github.com/keel-storage/keel/reconcile/plan"
	"github.com/keel-storage/keel/reconcile/plan/removal"
	"github.com/keel-storage/keel/reconcile/state"
	"github.com/keel-storage/keel/reconcile/state/statefile"
	"github.com/keel-storage/keel/schema"
	"github.com/keel-storage/keel/schema/desiredfiles"
	"github.com/keel-storage/keel/schema/spec"
)

// DefaultStateDir is where keel keeps its own state on a host (systemd's
// StateDirectory=keel): the checkpoints of safe removals in progress.
const DefaultStateDir = "/var/lib/keel"

// Loop holds one host's desired state and executor across passes. What it
// is wired to is fixed by New for its whole life; what one pass may do
// (dry run, preemption, a host probed beforehand) is given to that pass
// (Options). A Loop runs one job at a time: its methods are not safe for
// concurrent use, except Probe and SysfsProbe, which read only the host.
type Loop struct {
	// configs are the desired-state paths (-c); none means schema.DefaultPath.
	configs []string
	// source is what probes read (the live host, or a snapshot replay).
	source hostio.Source
	// exec applies actions; its stuck and destructive-once state lives as
	// long as the Loop.
	exec *executor.Executor
	log  hclog.Logger
	// skipOwnerCheck disables the ownership check of the desired state.
	skipOwnerCheck bool
	// wipes sees each safe removal's progress.
	wipes WipeObserver
	// state is keel's persisted memory (reconcile/state): the LVs bound to
	// absent names, when keel first saw each name.
	state statefile.Store

	// runner runs the safe removal's commands, behind the executor's argv
	// allowlist like every other mutating command.
	runner hostio.Runner
	// fileRoot is where keel's generated files are written ("/" on a host).
	fileRoot string
	// stateDir holds keel's own state (DefaultStateDir on a host).
	stateDir string
	// lastGood is where Load keeps a copy of the desired state that
	// loaded ("" keeps none).
	lastGood    string
	desired     *spec.Config
	configError *plan.Finding
	// files are the files of the desired state in force, loader validates.
	files  []schema.File
	loader *schema.Loader
	cache  DesiredCache
	// lastHost and lastPlan are the newest verifying re-probe.
	lastHost *model.Host
	lastPlan plan.Result
	// mem is keel's state as loaded for the current pass.
	mem plan.Memory
	// holdsLogged are the holds in force the journal last said (loadHolds).
	holdsLogged map[string]state.Hold
	// pveStorageCfg is the desired state's proxmox.storageConfig, set by
	// Load: Probe reads it while the daemon loads the next desired state.
	pveStorageCfg atomic.Pointer[string]
}

// WipeObserver sees each safe removal's progress: the daemon publishes it
// as metrics, keel wipe draws a bar. Either function may be nil. They run
// on the goroutine of the pass that removes.
type WipeObserver struct {
	Started  func(t removal.Target, pass removal.Mode, p *wipe.Progress)
	Finished func(t removal.Target, pass removal.Mode, p *wipe.Progress, err error)
}

// Wiring is what New needs besides the configuration paths: everything
// fixed for the loop's life.
type Wiring struct {
	Source      hostio.Source
	Runner      hostio.Runner // mutating commands; nil means Source.Runner
	SysFS       bcache.SysFS  // nil means the host's /
	LVMConfPath string        // "" means lvmconf.DefaultPath
	DpkgDir     string        // dpkg's locks, asked before lvm.conf is written; "" means lvmconf.DefaultDpkgDir
	FileRoot    string        // root for the files keel generates; "" means "/"
	StateDir    string        // keel's own state (wipe checkpoints); "" means DefaultStateDir
	StatePath   string        // keel's state file; "" means state.json in StateDir
	Options     executor.Options
	Log         hclog.Logger
	// SkipOwnerCheck disables the ownership check of the desired state
	// (tests, and keel wipe, which checks it itself).
	SkipOwnerCheck bool
	// Wipes sees each safe removal's progress.
	Wipes WipeObserver
	// KeepLastGood saves a copy of each desired state that loads (Load) as
	// LastGoodFile in StateDir, for LoadLastGood: set on a live host by the
	// commands that run from the desired state (run, apply, activate).
	KeepLastGood bool
	// Cache, when set, gives the desired state of files this keel
	// validated before without evaluating them, and keeps each one that
	// loads.
	Cache DesiredCache
}

// DesiredCache keeps validated desired states keyed by their files (and,
// in cmd/keel's implementation, by the binary that validated them). A
// hit must be exactly what evaluating the same files would give; an
// invalid desired state is never put.
type DesiredCache interface {
	Get(files []schema.File) (*spec.Config, bool)
	Put(files []schema.File, cfg *spec.Config) error
}

// Options are one job's choices: a pass, a convergence, a bcache fast path.
type Options struct {
	// Mode is the executor's mode (dry run, maintenance, retry). The bcache
	// fast path always applies partially and ignores it.
	Mode executor.Mode
	// Gate, when set, lets the caller preempt the job while it only reads
	// the host (the daemon gives one per trigger).
	Gate *Gate
	// Host, when set, is a probe the caller took after the event that asked
	// for the job, planned against instead of probing first: a full Probe
	// for Converge, a SysfsProbe for BcachePass.
	Host *model.Host
}

// New wires a Loop: the executor runs commands through w.Runner, writes
// sysfs through w.SysFS, edits w.LVMConfPath, writes keel's generated files
// under w.FileRoot, and re-probes through w.Source.
func New(configs []string, w Wiring) *Loop {
	if w.Runner == nil {
		w.Runner = w.Source.Runner
	}
	if w.SysFS == nil {
		w.SysFS = bcache.DirFS("/")
	}
	if w.LVMConfPath == "" {
		w.LVMConfPath = lvmconf.DefaultPath
	}
	if w.Log == nil {
		w.Log = hclog.NewNullLogger()
	}
	if w.StateDir == "" {
		w.StateDir = DefaultStateDir
	}
	if w.StatePath == "" {
		w.StatePath = filepath.Join(w.StateDir, "state.json")
	}
	l := &Loop{configs: configs, source: w.Source, log: w.Log, runner: hostio.Allowlisted{Runner: w.Runner},
		stateDir: w.StateDir, state: statefile.Store{Path: w.StatePath}, skipOwnerCheck: w.SkipOwnerCheck, wipes: w.Wipes,
		cache: w.Cache}
	if w.KeepLastGood {
		l.lastGood = filepath.Join(w.StateDir, LastGoodFile)
	}
	ex := executor.New(w.Runner, w.Options)
	ex.Log = w.Log.Named("executor")
	ex.Records = actionRecords{store: l.state}
	ex.VGLockHeld = executor.LVMLockHeld(plan.SuspendedLockDir)
	ex.Starting = l.startingPvmove
	sysfs := bcache.Applier(w.SysFS)
	ex.Sysfs = func(ctx context.Context, act plan.Action) error {
		err := sysfs(ctx, act)
		if errors.Is(err, bcache.ErrBadValue) {
			return &hostio.RefusedError{Reason: err.Error()}
		}
		return err
	}
	lw := &lvmconf.Writer{Path: w.LVMConfPath, Runner: w.Runner, Log: w.Log, DpkgDir: w.DpkgDir}
	ex.LVMConf = func(ctx context.Context, ch plan.LVMConfChange) error {
		// A file or filter keel cannot parse is refused, not retried: only
		// a person can say what the existing filter meant. While dpkg holds
		// its lock the write is refused for this pass only: retrying within
		// the pass would race the package's own write, and the planner
		// plans the action again on the next one.
		err := lw.Apply(ctx, ch)
		var fe *lvmconf.FilterError
		var pe *lvmconf.ParseError
		if errors.As(err, &fe) || errors.As(err, &pe) || errors.Is(err, lvmconf.ErrBadEntry) || errors.Is(err, lvmconf.ErrDpkgLocked) {
			return &hostio.RefusedError{Reason: err.Error()}
		}
		return err
	}
	root := w.FileRoot
	if root == "" {
		root = "/"
	}
	ex.Files = executor.DirFiles(root)
	l.fileRoot = root
	ex.Wipe = l.wipeAbsent
	l.exec = ex
	return l
}

// Desired returns the desired state in force (nil before the first valid load).
func (l *Loop) Desired() *spec.Config { return l.desired }

// Read checks the ownership of the desired-state files and reads them.
func (l *Loop) Read() ([]schema.File, error) {
	if !l.skipOwnerCheck {
		if err := CheckOwnership(l.Paths()); err != nil {
			return nil, err
		}
	}
	return schema.ReadFiles(l.Paths()...)
}

// Load validates and loads files returned by Read (readErr is Read's
// error, which counts as an invalid desired state): loop.Load(loop.Read()).
// When they are invalid, or not owned by root, the previous desired state
// stays in force and the error is returned (and kept as a config.invalid
// finding until a valid one loads). A valid one is copied for
// LoadLastGood when Wiring.KeepLastGood is set. A panic while the files are evaluated
// is an invalid desired state too: it is logged with its stack and the
// last good state stays in force.
func (l *Loop) Load(files []schema.File, readErr error) error {
	err := readErr
	if err == nil {
		var cfg *spec.Config
		if cfg, err = l.evaluate(files); err == nil {
			l.adopt(cfg, files)
			l.configError = nil
			if l.lastGood != "" {
				// Not fatal: the desired state is in force; only a later
				// boot with an invalid one lacks the copy.
				if err := saveLastGood(l.lastGood, l.Paths(), files); err != nil {
					l.log.Warn("keeping a copy of the desired state", "err", err)
				}
			}
			return nil
		}
	}
	l.setInvalid(err)
	return err
}

// adopt puts desired, decoded from files, in force.
func (l *Loop) adopt(desired *spec.Config, files []schema.File) {
	l.desired, l.files = desired, files
	l.pveStorageCfg.Store(&desired.Proxmox.StorageConfig)
}

// evaluate validates and decodes files, or takes them from the cache,
// turning a panic into an error.
func (l *Loop) evaluate(files []schema.File) (cfg *spec.Config, err error) {
	if l.cache != nil {
		if cfg, ok := l.cache.Get(files); ok {
			return cfg, nil
		}
	}
	defer func() {
		if r := recover(); r != nil {
			l.log.Error("panic while evaluating the desired state", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			cfg, err = nil, fmt.Errorf("keel could not evaluate it (panic: %v); please report this", r)
		}
	}()
	if l.loader == nil {
		l.loader = schema.NewLoader()
	}
	d, err := l.loader.LoadFiles(files)
	if err != nil {
		return nil, err
	}
	if l.cache != nil {
		if err := l.cache.Put(files, d.Config); err != nil {
			// Only time is lost: the next load evaluates again.
			l.log.Debug("desired-state cache", "err", err)
		}
	}
	return d.Config, nil
}

// setInvalid keeps err as the config.invalid finding.
func (l *Loop) setInvalid(err error) {
	where := strings.Join(l.Paths(), ",")
	l.configError = &plan.Finding{ID: plan.ConfigInvalid, Severity: plan.Error, Object: where,
		Message:  "the desired state does not validate; the last good one stays in force",
		Observed: oneLine(err.Error()), Remedy: "fix it (keel vet shows every problem with its position)"}
}

// InForce is the desired state in force with its files (Loop.InForce), to
// be put back by Loop.Restore.
type InForce struct {
	desired *spec.Config
	files   []schema.File
}

// InForce returns the desired state in force.
func (l *Loop) InForce() InForce { return InForce{l.desired, l.files} }

// Changed reports whether the desired state in force is another than s.
func (l *Loop) Changed(s InForce) bool { return l.desired != s.desired }

// Restore puts s back in force and raises config.invalid with why: the
// daemon's way back from a desired state that loaded but that keel cannot
// plan or apply without crashing.
//
// The desired state put back is stored in the cache again, so that the
// one that failed is not the one the cache gives (keel-boot at the next
// boot takes the cache's entry for the files on disk; cmd/keel's cache
// keeps one entry).
func (l *Loop) Restore(s InForce, why error) {
	l.desired, l.files = s.desired, s.files
	if s.desired != nil {
		l.pveStorageCfg.Store(&s.desired.Proxmox.StorageConfig)
		if l.cache != nil {
			if err := l.cache.Put(s.files, s.desired); err != nil {
				l.log.Debug("desired-state cache", "err", err)
			}
		}
	}
	l.setInvalid(why)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Paths returns the desired-state paths the loop reads.
func (l *Loop) Paths() []string { return schema.Paths(l.configs) }

// CheckOwnership refuses desired-state files that keel must not take
// (desiredfiles.CheckOwnership).
func CheckOwnership(paths []string) error { return desiredfiles.CheckOwnership(paths, os.Geteuid()) }

// Probe runs a full probe pass of the host and logs how long it took
// (debug). It reads only the Source, so it may run while the desired state
// is being loaded.
func (l *Loop) Probe(ctx context.Context) (*model.Host, error) {
	start := time.Now()
	h, err := probes.ProbeWith(ctx, l.source, l.probeOptions())
	l.log.Debug("probe", "took", Since(start), "err", err)
	return h, err
}

// probeOptions are the probe's settings from the desired state in force:
// the storage.cfg the desired state names (the default before any loaded).
func (l *Loop) probeOptions() probes.Options {
	var opt probes.Options
	if p := l.pveStorageCfg.Load(); p != nil {
		opt.PVEStorageCfg = *p
	}
	return opt
}

// Since is the time since start, rounded to the millisecond for a log line.
func Since(start time.Time) string { return time.Since(start).Round(time.Millisecond).String() }

// plan probes the host and plans against the desired state in force.
func (l *Loop) plan(ctx context.Context) (*model.Host, plan.Result, error) {
	h, err := l.Probe(ctx)
	if err != nil {
		return nil, plan.Result{}, err
	}
	return h, l.planOn(h), nil
}

// planOn plans the desired state in force against h.
func (l *Loop) planOn(h *model.Host) plan.Result {
	start := time.Now()
	l.seeVGs(h)
	l.seePvmoves(h)
	l.seeSuspended(h)
	res := plan.PlanWith(l.desired, h, l.mem)
	l.log.Debug("plan", "took", Since(start), "actions", len(res.Actions), "findings", len(res.Findings))
	return res
}

// verifyFull verifies an action by a full probe and plan; the newest one
// is kept, so a pass whose last action converged needs no further probe.
func (l *Loop) verifyFull(ctx context.Context, _ plan.Action) ([]plan.Finding, error) {
	h, res, err := l.plan(ctx)
	l.lastHost, l.lastPlan = h, res
	return res.Findings, err
}

// verifyBcache verifies a bcache fast-path write as it was planned: from
// sysfs, against the bcache part of the desired state.
func (l *Loop) verifyBcache(ctx context.Context, _ plan.Action) ([]plan.Finding, error) {
	_, res := l.planBcache(ctx)
	return res.Findings, nil
}

// PassResult is one pass: what the executor did and every finding left
// after it (the planner's, the executor's stuck and refused ones, and
// config.invalid while the newest desired state is invalid).
type PassResult struct {
	Report   executor.Report
	Findings []plan.Finding
	// Levels are the fill levels (VDO and thin pool use) of the newest plan.
	Levels []plan.Level
	Host   *model.Host
	// Pending counts the actions of the newest plan that a further pass
	// would attempt; -1 when the pass did not plan against a probe taken
	// after its last action (nothing ran, so its own plan is the newest).
	Pending int
}

// Worst returns the highest severity among the findings, and false when
// there are none.
func (r PassResult) Worst() (plan.Severity, bool) {
	var w plan.Severity
	for i, f := range r.Findings {
		if i == 0 || f.Severity > w {
			w = f.Severity
		}
	}
	return w, len(r.Findings) > 0
}

// ErrNoDesiredState is returned by a pass before any desired state loaded.
var ErrNoDesiredState = errors.New("no valid desired state loaded")

// pass probes (unless o.Host is set), plans and applies once. An error
// means the pass could not run (no desired state, probe failed); the
// result is still filled in as far as it got.
func (l *Loop) pass(ctx context.Context, o Options) (PassResult, error) {
	h, m := o.Host, o.Mode
	out := PassResult{Pending: -1}
	if l.configError != nil {
		out.Findings = append(out.Findings, *l.configError)
	}
	if l.desired == nil {
		return out, ErrNoDesiredState
	}
	l.mem = l.loadMemory()
	var res plan.Result
	if h == nil {
		var err error
		if h, res, err = l.plan(ctx); err != nil {
			return out, err
		}
	} else {
		if opt := l.probeOptions(); opt.PVEStorageCfg != "" && h.PVEStorageCfg != opt.PVEStorageCfg {
			// Probed while a desired state that names another storage.cfg
			// loaded: that part is read again, at the path now in force.
			probes.ProbeProxmox(l.source, h, opt)
		}
		res = l.planOn(h)
	}
	out.Host, out.Levels = h, res.Levels
	l.settleRemovals(h, m.DryRun)
	actions := res.Actions
	if cut := untilLVMConf(actions); !m.DryRun && len(cut) < len(actions) {
		actions, m.Partial = cut, true // the rest is re-planned, not dropped
	}
	start := time.Now()
	var rep executor.Report
	var err error
	if !o.Gate.apply(func() { rep, err = l.exec.Apply(ctx, actions, res.Findings, m, l.verifyFull) }) {
		return out, ErrPreempted
	}
	if len(actions) > 0 {
		l.log.Debug("apply", "took", Since(start), "actions", len(actions), "converged", rep.Count(executor.Converged))
	}
	out.Report = rep
	if err != nil {
		return out, err
	}
	final := res.Findings
	if rep.Count(executor.Converged) > 0 || rep.Count(executor.Stuck) > 0 {
		// The host changed: what is left is what a fresh probe says. When
		// the last action that ran converged, its verifying re-probe is
		// that fresh probe: nothing ran after it.
		var fresh plan.Result
		if last := lastRun(rep); last != nil && last.Status == executor.Converged && l.lastHost != nil {
			out.Host, fresh = l.lastHost, l.lastPlan
		} else {
			h, fresh, err = l.plan(ctx)
			if err != nil {
				return out, err
			}
			out.Host = h
		}
		final, out.Pending, out.Levels = fresh.Findings, attemptable(fresh.Actions, m.Maintenance), fresh.Levels
		final = append(final, initramfsNotice(res.Findings, rep)...)
	}
	out.Findings = append(out.Findings, final...)
	out.Findings = append(out.Findings, rep.Findings...)
	sort.SliceStable(out.Findings, func(i, j int) bool { return out.Findings[i].Key() < out.Findings[j].Key() })
	return out, nil
}

// initramfsNotice returns the plan's lvm.initramfs_stale findings when the
// lvm.conf write they announce converged: the fresh plan after the write no
// longer sees a change, yet the initramfs still holds the older lvm.conf
// (Debian's lvm2 hook copies /etc/lvm), so the pass that wrote says so.
func initramfsNotice(planned []plan.Finding, rep executor.Report) []plan.Finding {
	wrote := slices.ContainsFunc(rep.Results, func(r executor.Result) bool {
		return r.Action.Kind == plan.KindLVMConf && r.Status == executor.Converged
	})
	if !wrote {
		return nil
	}
	var out []plan.Finding
	for _, f := range planned {
		if f.ID == plan.LVMInitramfsStale {
			out = append(out, f)
		}
	}
	return out
}

// attemptable counts the actions a pass would try to apply: report-only
// drift is never applied, and maintenance actions only in maintenance mode.
func attemptable(actions []plan.Action, maintenance bool) int {
	n := 0
	for _, x := range actions {
		switch {
		case x.Kind == plan.KindNone || x.Class == plan.Immutable:
		case x.Class == plan.Maintenance && !maintenance:
		default:
			n++
		}
	}
	return n
}

// untilLVMConf cuts the actions after an lvm.conf change: what LVM sees
// depends on scan_lvs and the filter, so everything planned behind it was
// planned against a view that no longer holds (a VG on an LV is invisible
// while scan_lvs is 0, and would look missing). Converge re-plans.
func untilLVMConf(actions []plan.Action) []plan.Action {
	for i, x := range actions {
		if x.Kind == plan.KindLVMConf {
			return actions[:i+1]
		}
	}
	return actions
}

// lastRun returns the last result of an action that was attempted.
func lastRun(rep executor.Report) *executor.Result {
	for i := len(rep.Results) - 1; i >= 0; i-- {
		if rep.Results[i].Attempts > 0 {
			return &rep.Results[i]
		}
	}
	return nil
}

// MaxPasses bounds Converge: creating a VDO LV can unlock the VG stacked on
// it, which the planner can only plan once the LV exists.
const MaxPasses = 5

// Converge runs passes until one converges no action (nothing more became
// possible), at most MaxPasses. A dry run is one pass. The results of every
// pass are concatenated; the findings are those of the last pass. Only the
// first pass plans against o.Host: o.Host must be a probe taken after the
// event that asked for the passes (the daemon probes while it loads a
// changed desired state), so the plan is still made against what the host
// reports, never against memory.
func (l *Loop) Converge(ctx context.Context, o Options) (PassResult, error) {
	var all PassResult
	m := o.Mode
	for i := 0; i < MaxPasses; i++ {
		res, err := l.pass(ctx, o)
		o.Host = nil
		converged := res.Report.Count(executor.Converged)
		res.Report.Results = append(all.Report.Results, res.Report.Results...)
		all = res
		if err != nil || m.DryRun || converged == 0 {
			return all, err
		}
		if res.Pending == 0 {
			// The pass's last probe came after its last action and planned
			// nothing to apply: another pass would probe to the same end.
			return all, nil
		}
		left := 0
		for _, f := range res.Findings {
			if f.Severity >= plan.Warning {
				left++
			}
		}
		if left == 0 {
			return all, nil
		}
	}
	return all, nil
}

// sysfsOnly runs no command: a probe through it reads only files, which is
// all the bcache part of the host needs.
type sysfsOnly struct{}

func (sysfsOnly) Run(_ context.Context, c hostio.Cmd) (hostio.Result, error) {
	return hostio.Result{ExitCode: -1}, fmt.Errorf("%s: not run by the bcache fast path", c)
}

// planBcache reads sysfs only (no command) and plans the bcache part of
// the desired state in force against it.
func (l *Loop) planBcache(ctx context.Context) (*model.Host, plan.Result) {
	start := time.Now()
	h, _ := l.SysfsProbe(ctx)
	res := l.planBcacheOn(h)
	l.log.Debug("bcache sysfs probe and plan", "took", Since(start), "actions", len(res.Actions))
	return h, res
}

// planBcacheOn plans the bcache part of the desired state in force against
// h, with the operators' holds: the fast path writes nothing to a held
// device either.
func (l *Loop) planBcacheOn(h *model.Host) plan.Result {
	mem := plan.Memory{FirstPass: true, Now: time.Now()}
	l.loadHolds(&mem)
	return plan.PlanWith(&spec.Config{Bcache: l.desired.Bcache, Waivers: l.desired.Waivers, Holds: l.desired.Holds}, h, mem)
}

// SysfsProbe reads the host's files only (no command): all the bcache fast
// path needs. Like Probe it reads only the Source, so it may run while the
// desired state loads. Its error is always set (no LVM command ran).
func (l *Loop) SysfsProbe(ctx context.Context) (*model.Host, error) {
	start := time.Now()
	h, err := probes.Probe(ctx, hostio.Source{Runner: sysfsOnly{}, FS: l.source.FS})
	l.log.Debug("sysfs probe", "took", Since(start))
	return h, err
}

// BcachePass is the daemon's fast path after the kernel registers a bcache
// device, or after a change of the desired state that touches only bcache
// devices (BcacheOnly): it reads sysfs only (no lvm command, which can take
// seconds on a busy host), plans the declared bcache devices alone, and
// writes their tunables at once. Each write is verified the same way, by
// reading sysfs again and planning the bcache part again; the full pass
// that follows sees everything else. o.Host, when set, is a SysfsProbe
// taken after the event that asked for the fast path; o.Mode is not used.
func (l *Loop) BcachePass(ctx context.Context, o Options) (executor.Report, error) {
	h := o.Host
	if l.desired == nil || len(l.desired.Bcache) == 0 {
		return executor.Report{}, nil
	}
	var res plan.Result
	if h == nil {
		_, res = l.planBcache(ctx)
	} else {
		res = l.planBcacheOn(h)
	}
	var acts []plan.Action
	for _, x := range res.Actions {
		switch {
		case x.Kind == plan.KindSysfs:
			acts = append(acts, x)
		case x.ID == bcacheRuleAction && len(x.Files) == 1 && activation.BcacheRuleComplete(x.Files[0].Content):
			// The rule first, and its udev reload only after the
			// tunables (afterRuleWrite): a busy udevd would hold them
			// up to the reload's 5 s. Without the new rule on disk, a
			// "change" uevent of the device between the tunables'
			// writes and the full pass would apply the old rule's
			// values until a later event ran the new rule.
			x.Commands = nil
			acts = append([]plan.Action{x}, acts...)
		}
	}
	var rep executor.Report
	var err error
	if !o.Gate.apply(func() { rep, err = l.exec.Apply(ctx, acts, res.Findings, executor.Mode{Partial: true}, l.verifyBcache) }) {
		return executor.Report{}, ErrPreempted
	}
	if err != nil || !converged(rep, bcacheRuleAction) {
		return rep, err
	}
	// The gate is open while udev reloads and settles: a newer trigger
	// may preempt the wait, and serves the change again.
	again, findings := l.afterRuleWrite(ctx)
	if o.Gate.Preempted() {
		return rep, ErrPreempted
	}
	if len(again) == 0 {
		return rep, nil
	}
	l.log.Info("bcache tunables set back by a uevent udev ran with the old rule: writing them again", "actions", len(again))
	var rep2 executor.Report
	if !o.Gate.apply(func() { rep2, err = l.exec.Apply(ctx, again, findings, executor.Mode{Partial: true}, l.verifyBcache) }) {
		return rep, ErrPreempted
	}
	rep.Results = append(rep.Results, rep2.Results...)
	rep.Findings = append(rep.Findings, rep2.Findings...)
	return rep, err
}

// converged reports whether the action id ran and converged in rep.
func converged(rep executor.Report, id string) bool {
	for _, r := range rep.Results {
		if r.Action.ID == id && r.Status == executor.Converged {
			return true
		}
	}
	return false
}

// afterRuleWrite makes the bcache rule the fast path has just written the
// one udevd applies, and returns the tunables to write again: those that an
// event udevd ran meanwhile set back. udevd looks at its rules files at most
// every 3 s (manager_reload in systemd's src/udev/udev-manager.c: "check for
// changed config, every 3 seconds at most"), so a uevent of the device it
// starts within 3 s of its last look runs the old rule, whose values land
// after the fast path's writes too and stay until a later event runs the new
// rule (e2e/underfire; docs/reliability.md). udevadm control --reload makes
// every event udevd starts from then on run the new rule; udevadm settle
// waits for those it started before, which may still set the old values back
// meanwhile (a busy worker keeps its rules until its event ends:
// manager_kill_workers); then sysfs is read and planned again.
// When udevd does not answer
// (settle waits for udevd's whole queue, which a flood of uevents keeps
// full), sysfs is read all the same, and the full pass that follows reads
// it again.
func (l *Loop) afterRuleWrite(ctx context.Context) ([]plan.Action, []plan.Finding) {
	for _, c := range []hostio.Cmd{
		{Name: plan.UdevReload[0], Args: plan.UdevReload[1:]},
		{Name: plan.UdevSettle[0], Args: plan.UdevSettle[1:], ReadOnly: true},
	} {
		res, err := l.runner.Run(ctx, c)
		if ctx.Err() != nil {
			return nil, nil // preempted (or stopping): nothing is read
		}
		if err == nil {
			err = res.Err(c)
		}
		switch {
		case err == nil:
		case c.Args[0] == "settle":
			// udevd's queue was not empty in time: usual under a
			// flood of uevents or over a slow device.
			l.log.Debug("udev's queue did not empty after the bcache rule's write", "err", err)
		default:
			l.log.Warn("udev did not reload its rules after the bcache rule's write", "cmd", c.String(), "err", err)
		}
	}
	_, res := l.planBcache(ctx)
	var acts []plan.Action
	for _, x := range res.Actions {
		if x.Kind == plan.KindSysfs {
			acts = append(acts, x)
		}
	}
	return acts, res.Findings
}

// bcacheRuleAction is the ID of the action that writes keel's bcache udev
// rule.
var bcacheRuleAction = "bcache.udev_rule:" + activation.BcacheRule

// BcacheOnly reports whether next differs from prev in bcache devices and
// nothing else: then the sysfs-only fast path can serve the change before
// the full pass, because every action the change can add or alter is a
// bcache tunable. Two nil states, or equal ones, are not a bcache change.
func BcacheOnly(prev, next *spec.Config) bool {
	if prev == nil || next == nil || reflect.DeepEqual(prev.Bcache, next.Bcache) {
		return false
	}
	p, n := *prev, *next
	p.Bcache, n.Bcache = nil, nil
	return reflect.DeepEqual(p, n)
}
