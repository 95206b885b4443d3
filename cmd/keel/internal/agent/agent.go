// Package agent is what keel apply and keel run share: load the desired
// state (keeping the last good one when a new one is invalid), probe the
// host, plan, execute, and report what is left.
package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/keel-storage/keel/probes"
	"github.com/keel-storage/keel/reconcile"
	"github.com/keel-storage/keel/reconcile/bcache"
	"github.com/keel-storage/keel/reconcile/executor"
	"github.com/keel-storage/keel/reconcile/lvmconf"
	"github.com/keel-storage/keel/reconcile/state"
	"github.com/keel-storage/keel/reconcile/wipe"
	"github.com/keel-storage/keel/schema"
)

// ConfigInvalidID is the finding raised while the newest desired state does
// not validate (the last good one stays in force).
const ConfigInvalidID = "config.invalid"

// Agent holds one host's desired state and executor across passes.
type Agent struct {
	// Configs are the desired-state paths (-c); none means schema.DefaultPath.
	Configs []string
	// Source is what probes read (the live host, or a snapshot replay).
	Source probes.Source
	// Exec applies actions; its stuck and destructive-once state lives as
	// long as the Agent.
	Exec *executor.Executor
	Log  hclog.Logger
	// SkipOwnerCheck disables the root-ownership check of the desired
	// state (tests only).
	SkipOwnerCheck bool
	// WipeStarted and WipeFinished, when set, see each safe removal's
	// progress (the daemon publishes it as metrics).
	WipeStarted  func(t wipe.Target, p *wipe.Progress)
	WipeFinished func(t wipe.Target)
	// State is keel's persisted memory (absent identities); the zero
	// Store is state.DefaultPath.
	State state.Store

	// mem is keel's state as loaded for the current pass.
	mem reconcile.Memory

	desired     *schema.Config
	configError *reconcile.Finding
	// files are the files of the desired state in force, loader validates.
	files  []schema.File
	loader *schema.Loader
	// lastHost and lastPlan are the newest re-probe of the executor.
	lastHost *probes.Host
	lastPlan reconcile.Result
	// bcacheVerify makes the executor's re-probe the bcache fast path's
	// own sysfs-only one while BcachePass applies.
	bcacheVerify bool
}

// Wiring is what New needs besides the configuration paths.
type Wiring struct {
	Source      probes.Source
	Runner      probes.Runner // mutating commands; nil means Source.Runner
	SysFS       bcache.SysFS  // nil means the host's /
	LVMConfPath string        // "" means lvmconf.DefaultPath
	FileRoot    string        // root for the files keel generates; "" means "/"
	StatePath   string        // keel's state file; "" means state.DefaultPath
	Options     executor.Options
	Log         hclog.Logger
}

// New wires an Agent: the executor runs commands through w.Runner, writes
// sysfs through w.SysFS, edits w.LVMConfPath, writes keel's generated files
// under w.FileRoot, and re-probes through w.Source.
func New(configs []string, w Wiring) *Agent {
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
	a := &Agent{Configs: configs, Source: w.Source, Log: w.Log, State: state.Store{Path: w.StatePath}}
	ex := executor.New(w.Runner, a.reprobe, w.Options)
	ex.Log = w.Log.Named("executor")
	sysfs := bcache.Applier(w.SysFS)
	ex.Sysfs = func(ctx context.Context, act reconcile.Action) error {
		err := sysfs(ctx, act)
		if errors.Is(err, bcache.ErrBadValue) {
			return &executor.RefusedError{Reason: err.Error()}
		}
		return err
	}
	lw := &lvmconf.Writer{Path: w.LVMConfPath, Runner: w.Runner, Log: w.Log}
	ex.LVMConf = func(ctx context.Context, ch reconcile.LVMConfChange) error {
		// A file or filter keel cannot parse is refused, not retried: only
		// a person can say what the existing filter meant.
		err := lw.Apply(ctx, ch)
		var fe *lvmconf.FilterError
		var pe *lvmconf.ParseError
		if errors.As(err, &fe) || errors.As(err, &pe) || errors.Is(err, lvmconf.ErrBadEntry) {
			return &executor.RefusedError{Reason: err.Error()}
		}
		return err
	}
	root := w.FileRoot
	if root == "" {
		root = "/"
	}
	ex.Files = executor.DirFiles(root)
	ex.Wipe = func(ctx context.Context, s reconcile.WipeSpec) error {
		return wipeRefused(a.wipeLV(ctx, w.Runner, s))
	}
	a.Exec = ex
	return a
}

// runnerExec adapts a probes.Runner to the wipe package's Executor, so
// the wipe's lvrename/lvremove go through the same runner (and command log)
// as every other action.
type runnerExec struct{ r probes.Runner }

func (x runnerExec) Run(ctx context.Context, argv []string) error {
	if len(argv) == 0 {
		return errors.New("empty command")
	}
	c := probes.Cmd{Name: argv[0], Args: argv[1:]}
	res, err := x.r.Run(ctx, c)
	if err != nil {
		return err
	}
	return res.Err(c)
}

// wipeLV removes an LV listed in its VG's absent list through
// reconcile/wipe, which re-checks every refusal against a fresh probe.
func (a *Agent) wipeLV(ctx context.Context, r probes.Runner, s reconcile.WipeSpec) error {
	h, err := probes.Probe(ctx, a.Source)
	if err != nil {
		return fmt.Errorf("wipe %s/%s: probe: %w", s.VG, s.LV, err)
	}
	decl := wipe.Declared{}
	for vg, d := range a.desired.VolumeGroups {
		decl[vg] = d.Absent
	}
	mem := a.loadMemory(false)
	targets, err := wipe.Plan(wipe.FromHost(h), decl, wipe.Request{Names: []string{s.VG + "/" + s.LV}, Mode: wipe.Mode(s.Mode), RequireAbsent: true,
		Known: mem.Absent, Held: mem.Held})
	if err != nil {
		return fmt.Errorf("wipe %s/%s: %w", s.VG, s.LV, err)
	}
	rm := &wipe.Remover{Exec: runnerExec{r}, Step: s.StepMax, Log: a.Log.Named("wipe")}
	if a.WipeStarted != nil {
		rm.Started = func(t wipe.Target, _ wipe.Mode, p *wipe.Progress) { a.WipeStarted(t, p) }
	}
	if a.WipeFinished != nil {
		rm.Finished = func(t wipe.Target, _ wipe.Mode, _ *wipe.Progress, _ error) { a.WipeFinished(t) }
	}
	// An exclusive open of each LV proves nobody holds it before anything
	// is renamed; the open count in the probe can miss a plain opener.
	if err := rm.Check(targets); err != nil {
		return fmt.Errorf("wipe %s/%s: %w", s.VG, s.LV, err)
	}
	if err := rm.CheckContent(ctx, a.Source.Runner, targets); err != nil {
		return fmt.Errorf("wipe %s/%s: %w", s.VG, s.LV, err)
	}
	return wipe.RemoveRecorded(ctx, rm, a.State, targets, time.Now)
}

// Desired returns the desired state in force (nil before the first valid load).
func (a *Agent) Desired() *schema.Config { return a.desired }

// Load reads and validates the desired state. When it is invalid, or not
// owned by root, the previous one stays in force and the error is returned
// (and kept as a config.invalid finding until a valid one loads).
func (a *Agent) Load() error {
	return a.LoadFiles(a.Read())
}

// Read checks the ownership of the desired-state files and reads them.
func (a *Agent) Read() ([]schema.File, error) {
	if !a.SkipOwnerCheck {
		if err := CheckOwnership(a.paths()); err != nil {
			return nil, err
		}
	}
	return schema.ReadFiles(a.paths()...)
}

// LoadFiles is Load for files returned by Read (readErr is Read's error,
// which counts as an invalid desired state).
func (a *Agent) LoadFiles(files []schema.File, readErr error) error {
	err := readErr
	if err == nil {
		if a.loader == nil {
			a.loader = schema.NewLoader()
		}
		var d *schema.Desired
		if d, err = a.loader.LoadFiles(files); err == nil {
			a.desired, a.files = d.Config, files
			a.configError = nil
			return nil
		}
	}
	where := strings.Join(a.paths(), ",")
	a.configError = &reconcile.Finding{ID: ConfigInvalidID, Severity: reconcile.Error, Object: where,
		Message:  "the desired state does not validate; the last good one stays in force",
		Observed: oneLine(err.Error()), Remedy: "fix it (keel vet shows every problem with its position)"}
	return err
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func (a *Agent) paths() []string {
	if len(a.Configs) == 0 {
		return []string{schema.DefaultPath}
	}
	return a.Configs
}

// CheckOwnership refuses desired-state files (and their directories) not
// owned by root or writable by anyone but their owner: whoever can write
// them can make keel run storage commands as root.
func CheckOwnership(paths []string) error {
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("desired state %s: %w", p, err)
		}
		check := []string{p}
		if st.IsDir() {
			m, _ := filepath.Glob(filepath.Join(p, "*.cue"))
			check = append(check, m...)
		}
		for _, f := range check {
			fi, err := os.Stat(f)
			if err != nil {
				return fmt.Errorf("desired state %s: %w", f, err)
			}
			if sys, ok := fi.Sys().(*syscall.Stat_t); ok && sys.Uid != 0 {
				return fmt.Errorf("desired state %s: owned by uid %d, not root; refusing it", f, sys.Uid)
			}
			if fi.Mode().Perm()&0o022 != 0 {
				return fmt.Errorf("desired state %s: mode %v is writable by group or others; refusing it", f, fi.Mode().Perm())
			}
		}
	}
	return nil
}

// Probe runs a full probe pass of the host and logs how long it took
// (debug). It reads only the Source, so it may run while the desired state
// is being loaded.
func (a *Agent) Probe(ctx context.Context) (*probes.Host, error) {
	start := time.Now()
	h, err := probes.Probe(ctx, a.Source)
	a.Log.Debug("probe", "took", since(start), "err", err)
	return h, err
}

// since is the time since start, rounded for the log.
func since(start time.Time) string { return time.Since(start).Round(time.Millisecond).String() }

// plan probes the host and plans against the desired state in force.
func (a *Agent) plan(ctx context.Context) (*probes.Host, reconcile.Result, error) {
	h, err := a.Probe(ctx)
	if err != nil {
		return nil, reconcile.Result{}, err
	}
	return h, a.planOn(h), nil
}

// planOn plans the desired state in force against h.
func (a *Agent) planOn(h *probes.Host) reconcile.Result {
	start := time.Now()
	res := reconcile.PlanWith(a.desired, h, a.mem)
	a.Log.Debug("plan", "took", since(start), "actions", len(res.Actions), "findings", len(res.Findings))
	return res
}

func (a *Agent) reprobe(ctx context.Context, _ reconcile.Action) ([]reconcile.Finding, error) {
	if a.bcacheVerify {
		// The bcache fast path verifies its sysfs writes as it planned
		// them: from sysfs, against the bcache part of the desired state.
		_, res := a.planBcache(ctx)
		return res.Findings, nil
	}
	h, res, err := a.plan(ctx)
	a.lastHost, a.lastPlan = h, res
	return res.Findings, err
}

// PassResult is one pass: what the executor did and every finding left
// after it (the planner's, the executor's stuck and refused ones, and
// config.invalid while the newest desired state is invalid).
type PassResult struct {
	Report   executor.Report
	Findings []reconcile.Finding
	Host     *probes.Host
	// Pending counts the actions of the newest plan that a further pass
	// would attempt; -1 when the pass did not plan against a probe taken
	// after its last action (nothing ran, so its own plan is the newest).
	Pending int
}

// Worst returns the highest severity among the findings, and false when
// there are none.
func (r PassResult) Worst() (reconcile.Severity, bool) {
	var w reconcile.Severity
	for i, f := range r.Findings {
		if i == 0 || f.Severity > w {
			w = f.Severity
		}
	}
	return w, len(r.Findings) > 0
}

// ErrNoDesiredState is returned by Pass before any desired state loaded.
var ErrNoDesiredState = errors.New("no valid desired state loaded")

// Pass probes, plans and applies once. An error means the pass could not
// run (no desired state, probe failed); the result is still filled in as
// far as it got.
func (a *Agent) Pass(ctx context.Context, maintenance, dryRun bool) (PassResult, error) {
	return a.pass(ctx, nil, maintenance, dryRun)
}

// pass is Pass planning against h when h is not nil: a probe the caller
// took after the event that asked for this pass, never an older one.
func (a *Agent) pass(ctx context.Context, h *probes.Host, maintenance, dryRun bool) (PassResult, error) {
	out := PassResult{Pending: -1}
	if a.configError != nil {
		out.Findings = append(out.Findings, *a.configError)
	}
	if a.desired == nil {
		return out, ErrNoDesiredState
	}
	a.mem = a.loadMemory(dryRun)
	var res reconcile.Result
	if h == nil {
		var err error
		if h, res, err = a.plan(ctx); err != nil {
			return out, err
		}
	} else {
		res = a.planOn(h)
	}
	out.Host = h
	a.Exec.SetMode(maintenance, dryRun)
	apply := a.Exec.Apply
	actions := res.Actions
	if cut := untilLVMConf(actions); !dryRun && len(cut) < len(actions) {
		actions, apply = cut, a.Exec.ApplySubset // the rest is re-planned, not dropped
	}
	start := time.Now()
	rep, err := apply(ctx, actions, res.Findings)
	if len(actions) > 0 {
		a.Log.Debug("apply", "took", since(start), "actions", len(actions), "converged", rep.Count(executor.Converged))
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
		var fresh reconcile.Result
		if last := lastRun(rep); last != nil && last.Status == executor.Converged && a.lastHost != nil {
			out.Host, fresh = a.lastHost, a.lastPlan
		} else {
			h, fresh, err = a.plan(ctx)
			if err != nil {
				return out, err
			}
			out.Host = h
		}
		final, out.Pending = fresh.Findings, attemptable(fresh.Actions, maintenance)
	}
	out.Findings = append(out.Findings, final...)
	out.Findings = append(out.Findings, rep.Findings...)
	sort.SliceStable(out.Findings, func(i, j int) bool { return out.Findings[i].Key() < out.Findings[j].Key() })
	return out, nil
}

// attemptable counts the actions a pass would try to apply: report-only
// drift is never applied, and maintenance actions only in maintenance mode.
func attemptable(actions []reconcile.Action, maintenance bool) int {
	n := 0
	for _, x := range actions {
		switch {
		case x.Kind == reconcile.KindNone || x.Class == reconcile.Immutable:
		case x.Class == reconcile.Maintenance && !maintenance:
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
func untilLVMConf(actions []reconcile.Action) []reconcile.Action {
	for i, x := range actions {
		if x.Kind == reconcile.KindLVMConf {
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
// pass are concatenated; the findings are those of the last pass.
func (a *Agent) Converge(ctx context.Context, maintenance, dryRun bool) (PassResult, error) {
	return a.ConvergeFrom(ctx, nil, maintenance, dryRun)
}

// ConvergeFrom is Converge whose first pass plans against h (nil: probe
// first). h must be a probe taken after the event that asked for the
// passes (the daemon probes while it loads a changed desired state), so the
// plan is still made against what the host reports, never against memory.
func (a *Agent) ConvergeFrom(ctx context.Context, h *probes.Host, maintenance, dryRun bool) (PassResult, error) {
	var all PassResult
	for i := 0; i < MaxPasses; i++ {
		res, err := a.pass(ctx, h, maintenance, dryRun)
		h = nil
		converged := res.Report.Count(executor.Converged)
		res.Report.Results = append(all.Report.Results, res.Report.Results...)
		all = res
		if err != nil || dryRun || converged == 0 {
			return all, err
		}
		if res.Pending == 0 {
			// The pass's last probe came after its last action and planned
			// nothing to apply: another pass would probe to the same end.
			return all, nil
		}
		left := 0
		for _, f := range res.Findings {
			if f.Severity >= reconcile.Warning {
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

func (sysfsOnly) Run(_ context.Context, c probes.Cmd) (probes.Result, error) {
	return probes.Result{ExitCode: -1}, fmt.Errorf("%s: not run by the bcache fast path", c)
}

// planBcache reads sysfs only (no command) and plans the bcache part of
// the desired state in force against it.
func (a *Agent) planBcache(ctx context.Context) (*probes.Host, reconcile.Result) {
	start := time.Now()
	h, _ := a.SysfsProbe(ctx)
	res := reconcile.Plan(&schema.Config{Bcache: a.desired.Bcache}, h)
	a.Log.Debug("bcache sysfs probe and plan", "took", since(start), "actions", len(res.Actions))
	return h, res
}

// SysfsProbe reads the host's files only (no command): all the bcache fast
// path needs. Like Probe it reads only the Source, so it may run while the
// desired state loads. Its error is always set (no LVM command ran).
func (a *Agent) SysfsProbe(ctx context.Context) (*probes.Host, error) {
	start := time.Now()
	h, err := probes.Probe(ctx, probes.Source{Runner: sysfsOnly{}, FS: a.Source.FS})
	a.Log.Debug("sysfs probe", "took", since(start))
	return h, err
}

// BcachePass is the daemon's fast path after the kernel registers a bcache
// device, or after a change of the desired state that touches only bcache
// devices (BcacheOnly): it reads sysfs only (no lvm command, which can take
// seconds on a busy host), plans the declared bcache devices alone, and
// writes their tunables at once. Each write is verified the same way, by
// reading sysfs again and planning the bcache part again; the full pass
// that follows sees everything else.
func (a *Agent) BcachePass(ctx context.Context) (executor.Report, error) {
	return a.BcachePassOn(ctx, nil)
}

// BcachePassOn is BcachePass planning against h, a SysfsProbe taken after
// the event that asked for it (nil: read sysfs now).
func (a *Agent) BcachePassOn(ctx context.Context, h *probes.Host) (executor.Report, error) {
	if a.desired == nil || len(a.desired.Bcache) == 0 {
		return executor.Report{}, nil
	}
	var res reconcile.Result
	if h == nil {
		_, res = a.planBcache(ctx)
	} else {
		res = reconcile.Plan(&schema.Config{Bcache: a.desired.Bcache}, h)
	}
	var acts []reconcile.Action
	for _, x := range res.Actions {
		if x.Kind == reconcile.KindSysfs {
			acts = append(acts, x)
		}
	}
	a.Exec.SetMode(false, false)
	a.bcacheVerify = true
	defer func() { a.bcacheVerify = false }()
	return a.Exec.ApplySubset(ctx, acts, res.Findings)
}

// BcacheOnly reports whether next differs from prev in bcache devices and
// nothing else: then the sysfs-only fast path can serve the change before
// the full pass, because every action the change can add or alter is a
// bcache tunable. Two nil states, or equal ones, are not a bcache change.
func BcacheOnly(prev, next *schema.Config) bool {
	if prev == nil || next == nil || reflect.DeepEqual(prev.Bcache, next.Bcache) {
		return false
	}
	p, n := *prev, *next
	p.Bcache, n.Bcache = nil, nil
	return reflect.DeepEqual(p, n)
}
