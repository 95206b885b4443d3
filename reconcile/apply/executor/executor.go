// Package executor applies the actions the planner produced, one at a time,
// and proves each one worked by asking the host again.
//
// Every action goes through the same cycle: check (class, rate limit, stuck
// state, safety guards), apply (argv commands through one Runner, sysfs
// writes with read-back, lvm.conf edits, wipes), then re-probe and verify that
// the findings the action remedies are gone. An action that does not converge
// is retried with exponential backoff a bounded number of times and is then
// marked stuck: it raises a reconcile.stuck finding and is not tried again
// until its fingerprint — the action itself plus the observed values of the
// findings it remedies — changes. The comparison is always against what the
// host reports, never against keel's memory of what it did (the lesson of
// Harvester's node-disk-manager, which wiped a disk every 6 seconds because
// it compared its spec with its own status).
//
// The clock, the runner and the re-probe function are injected, so all of
// this is unit-tested without a host.
package executor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/shell"
	"github.com/keel-storage/keel/reconcile/plan"
	"github.com/keel-storage/keel/reconcile/state"
)

// Status is what happened to one action in one pass.
type Status string

// Statuses of an action after a pass.
const (
	// Converged: applied and verified against a fresh probe.
	Converged Status = "converged"
	// Stuck: not converged after every retry, or flapping; not retried
	// until the desired or observed state changes.
	Stuck Status = "stuck"
	// Failed: the action could not be applied (a command failed) and will
	// be retried on the next pass.
	Failed Status = "failed"
	// Refused: a safety guard stopped the action; nothing ran.
	Refused Status = "refused"
	// Skipped: not applicable in this mode (maintenance without
	// --maintenance, immutable drift, a destructive action already run).
	Skipped Status = "skipped"
	// Planned: dry run; the action would have been applied.
	Planned Status = "planned"
)

// Clock is the executor's view of time.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives once d has elapsed.
	After(d time.Duration) <-chan time.Time
}

// RealClock is the wall clock.
type RealClock struct{}

// Now returns the current time.
func (RealClock) Now() time.Time { return time.Now() }

// After waits for d on the real clock.
func (RealClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Verify probes the host again after an action and returns the findings
// that remain for the desired state. The executor only looks at the keys the
// action remedies, so an implementation may probe just the action's object
// (the bcache fast path reads sysfs only). It is handed to each Apply call.
type Verify func(ctx context.Context, a plan.Action) ([]plan.Finding, error)

// SysfsApplier writes an action's sysfs values and reads each one back. A
// value the kernel did not take (clamped, rejected) is returned in the
// error; see reconcile/apply/bcache.
type SysfsApplier func(ctx context.Context, a plan.Action) error

// LVMConfApplier edits lvm.conf as the action says; see reconcile/apply/lvmconf.
type LVMConfApplier func(ctx context.Context, change plan.LVMConfChange) error

// FileApplier replaces whole files atomically; see DirFiles.
type FileApplier func(ctx context.Context, files []plan.FileWrite) error

// Wiper performs a safe removal; see reconcile/apply/wipe.
type Wiper func(ctx context.Context, spec plan.WipeSpec) error

// Options tune the executor. Zero values take the defaults in parentheses.
type Options struct {
	// MaxAttempts bounds how often an action that does not converge is
	// applied before it is marked stuck (4).
	MaxAttempts int
	// Backoff is the wait after the first failed attempt; it doubles after
	// each further one (500ms), up to MaxBackoff (30s).
	Backoff    time.Duration
	MaxBackoff time.Duration
	// Limit and Burst rate-limit all actions together, as a token bucket:
	// Limit actions per second on average, at most Burst at once (1/s, 10).
	Limit float64
	Burst int
	// FlapCount and FlapWindow catch actions that converge and are then
	// undone again and again: the FlapCount-th application of the same
	// action (ID and content: the same values) within FlapWindow is
	// refused and the action is marked stuck (6 within 10m). An action
	// whose values change each time is the desired state changing, not
	// the host undoing it, and is not counted as flapping.
	FlapCount  int
	FlapWindow time.Duration
}

// Mode is how one Apply call runs; it belongs to the call, not to the
// Executor, so two callers never see each other's switches.
type Mode struct {
	// DryRun reports what would run and runs nothing.
	DryRun bool
	// Maintenance allows actions of class Maintenance (keel apply --maintenance).
	Maintenance bool
	// Partial says the actions are only part of the host's plan (the
	// daemon's bcache fast path, the live actions keel activate re-applies
	// at boot, a pass cut after an lvm.conf change): the stuck state of
	// actions not among them is kept instead of cleared.
	Partial bool
	// Retry tries again the actions an earlier process marked stuck (keel
	// apply run by a person). Destructive records hold regardless.
	Retry bool
	// Once attempts each action once: one that fails or does not verify is
	// reported Failed, neither retried nor marked stuck, because the caller
	// runs its own loop (keel activate probes and plans again each round).
	Once bool
}

func (o *Options) fill() {
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 4
	}
	if o.Backoff <= 0 {
		o.Backoff = 500 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 30 * time.Second
	}
	if o.Limit <= 0 {
		o.Limit = 1
	}
	if o.Burst <= 0 {
		o.Burst = 10
	}
	if o.FlapCount <= 0 {
		o.FlapCount = 6
	}
	if o.FlapWindow <= 0 {
		o.FlapWindow = 10 * time.Minute
	}
}

// Executor applies actions. It keeps, across passes, the stuck state, the
// history used for flap detection and the set of destructive actions it has
// already run, so a daemon reuses one Executor for its whole life. It is safe
// for use by one pass at a time.
type Executor struct {
	Runner  hostio.Runner
	Sysfs   SysfsApplier
	LVMConf LVMConfApplier
	Files   FileApplier
	Wipe    Wiper
	Clock   Clock
	Log     hclog.Logger
	// Records keeps the stuck and destructive records across processes;
	// nil keeps them in this process only.
	Records Records
	// VGLockHeld says whether an LVM command holds VG vg's lock now; the
	// resume of a suspended device waits while one does (guard). Nil: no
	// check (LVMLockHeld is the live one).
	VGLockHeld func(vg string) (bool, error)
	// Starting, when set, is told of each command of an action before it
	// runs; an error holds the command and fails the action. keel records
	// there the pvmoves it starts (converge), before their first change.
	Starting func(a plan.Action, argv []string) error

	opts Options

	mu          sync.Mutex
	stuck       map[string]stuckState             // by action ID
	history     map[string]map[string][]time.Time // by action ID, then content (contentKey)
	destructive map[string]bool                   // action IDs already run in this process
	recs        map[string]state.Action
	loaded      bool  // recs hold what Records had
	recordsErr  error // the last load failed: destructive actions are held
	tokens      float64
	lastFill    time.Time
}

type stuckState struct {
	fingerprint string
	reason      string
	earlier     bool // recorded by an earlier process
}

// New returns an Executor running commands through r. Appliers for sysfs,
// lvm.conf and wipes are set on the fields; an action whose applier is
// missing fails with a clear error.
func New(r hostio.Runner, opts Options) *Executor {
	opts.fill()
	return &Executor{
		Runner:      r,
		Clock:       RealClock{},
		Log:         hclog.NewNullLogger(),
		opts:        opts,
		stuck:       map[string]stuckState{},
		history:     map[string]map[string][]time.Time{},
		destructive: map[string]bool{},
		recs:        map[string]state.Action{},
		tokens:      float64(opts.Burst),
	}
}

// Options returns the options in force, with defaults filled in.
func (e *Executor) Options() Options { return e.opts }

// Result is what happened to one action.
type Result struct {
	Action   plan.Action `json:"action"`
	Status   Status      `json:"status"`
	Attempts int         `json:"attempts"`
	// Detail explains a status other than converged, in one line.
	Detail string `json:"detail,omitempty"`
	// Commands are the argv lists run for this action, in order.
	Commands [][]string `json:"commands,omitempty"`
}

// Report is the outcome of one pass.
type Report struct {
	Results []Result `json:"results"`
	// Findings are the executor's own findings: one reconcile.stuck per
	// stuck action and one reconcile.refused per refusal.
	Findings []plan.Finding `json:"findings,omitempty"`
}

// Count returns how many results have status s.
func (r Report) Count(s Status) int {
	n := 0
	for _, res := range r.Results {
		if res.Status == s {
			n++
		}
	}
	return n
}

// Fingerprint identifies an action together with the observed state it
// acts on: its ID and content, and the expected and observed values of the
// findings it remedies. A stuck action is retried only when this changes.
func Fingerprint(a plan.Action, findings []plan.Finding) string {
	h := sha256.New()
	b, _ := json.Marshal(a) // plain data: cannot fail
	h.Write(b)
	byKey := map[string]plan.Finding{}
	for _, f := range findings {
		byKey[f.Key()] = f
	}
	keys := append([]string(nil), a.Remedies...)
	sort.Strings(keys)
	for _, k := range keys {
		f := byKey[k]
		fmt.Fprintf(h, "\x00%s\x00%s\x00%s", k, f.Expected, f.Observed)
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// Apply runs one pass over actions, in order, in mode m. findings are the
// planner's findings for the same probe; they feed the fingerprints. Each
// action that ran is verified by verify (nil: an action whose commands
// succeeded counts as converged). Apply returns an error only when ctx
// ends; everything else is in the Report.
func (e *Executor) Apply(ctx context.Context, actions []plan.Action, findings []plan.Finding, m Mode, verify Verify) (Report, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var rep Report
	e.loadRecords()
	if !m.Partial && !m.DryRun {
		e.clearUnplanned(actions)
	}
	for _, a := range actions {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		res := e.one(ctx, a, findings, m, verify)
		rep.Results = append(rep.Results, res)
		switch res.Status {
		case Stuck:
			rep.Findings = append(rep.Findings, stuckFinding(a, res.Detail))
		case Refused:
			rep.Findings = append(rep.Findings, plan.Finding{
				ID: plan.ReconcileRefused, Severity: plan.Error, Object: a.Object,
				Message:  fmt.Sprintf("action %s refused: %s", a.ID, res.Detail),
				Expected: a.Summary,
				Remedy:   "resolve the reason above by hand; keel will not force it",
			})
		}
	}
	return rep, ctx.Err()
}

// clearUnplanned drops the stuck state and the records of actions a whole
// plan no longer asks for: the host converged by other means or the desired
// state changed. A destructive record goes too: the LV it was bound to is
// gone or no longer declared absent, and keel's identity records
// (reconcile/state, Judge) still refuse to remove that LV a second time.
func (e *Executor) clearUnplanned(actions []plan.Action) {
	planned := make(map[string]bool, len(actions))
	for _, a := range actions {
		planned[a.ID] = true
	}
	for id := range e.stuck {
		if !planned[id] {
			e.Log.Info("stuck action no longer planned, clearing", "action", id)
			delete(e.stuck, id)
		}
	}
	if !e.loaded && e.Records != nil {
		return // what is on disk is unknown: keep it
	}
	for id := range e.recs {
		if !planned[id] {
			e.putLogged(id, func(r *state.Action) { *r = state.Action{} })
		}
	}
}

// one takes a through the gates (gate), then applies it with retries and
// backoff (attempts), and marks it stuck when it does not converge.
func (e *Executor) one(ctx context.Context, a plan.Action, findings []plan.Finding, m Mode, verify Verify) Result {
	res := Result{Action: a}
	log := e.Log.With("action", a.ID, "object", a.Object)
	fp := Fingerprint(a, findings)
	if done := e.gate(ctx, log, a, fp, m, &res); done {
		return res
	}
	e.attempts(ctx, log, a, fp, m, verify, &res)
	return res
}

// gate decides whether a may run now: a stuck action whose fingerprint is
// unchanged, report-only drift, a maintenance action outside maintenance
// mode, a destructive action that already ran, a refusal by the guards, a
// dry run or a flapping action all end here with res filled in (true).
func (e *Executor) gate(ctx context.Context, log hclog.Logger, a plan.Action, fp string, m Mode, res *Result) bool {
	if st, ok := e.stuck[a.ID]; ok {
		switch {
		case st.earlier && m.Retry && !m.DryRun && a.Class != plan.Destructive:
			log.Info("trying again an action an earlier keel marked stuck", "reason", st.reason)
		case st.fingerprint == fp:
			res.Status, res.Detail = Stuck, st.reason
			return true
		default:
			log.Info("state changed since action got stuck, trying again")
		}
		if !m.DryRun {
			delete(e.stuck, a.ID)
			e.putLogged(a.ID, func(r *state.Action) { r.Stuck = nil })
		}
	}
	switch {
	case a.Kind == plan.KindNone || a.Class == plan.Immutable:
		res.Status, res.Detail = Skipped, "immutable drift: report only, the remedy is a rebuild"
		return true
	case a.Class == plan.Maintenance && !m.Maintenance:
		res.Status, res.Detail = Skipped, "maintenance action: run keel apply --maintenance"
		return true
	case a.Class == plan.Destructive && e.recordsErr != nil:
		res.Status, res.Detail = Refused, fmt.Sprintf("keel's records of destructive actions cannot be read, so running it could repeat one: %v", e.recordsErr)
		return true
	case a.Class == plan.Destructive:
		if status, why := e.heldDestructive(a); why != "" {
			res.Status, res.Detail = status, why
			return true
		}
	}
	if err := e.guard(ctx, a); err != nil {
		res.Status, res.Detail = Refused, err.Error()
		log.Warn("action refused", "err", err)
		return true
	}
	if m.DryRun {
		res.Status = Planned
		return true
	}
	if e.flapping(a) {
		reason := fmt.Sprintf("applied %d times within %s: something keeps undoing it", e.opts.FlapCount-1, e.opts.FlapWindow)
		e.markStuck(a, fp, reason, res)
		log.Error("action flapping, marked stuck", "reason", reason)
		return true
	}
	return false
}

// attempts applies a and verifies it, up to MaxAttempts times with
// exponential backoff (a destructive action only once), and marks it stuck
// when it never converged.
func (e *Executor) attempts(ctx context.Context, log hclog.Logger, a plan.Action, fp string, m Mode, verify Verify, res *Result) {
	wait := e.opts.Backoff
	for attempt := 1; attempt <= e.opts.MaxAttempts; attempt++ {
		if err := e.takeToken(ctx); err != nil {
			res.Status, res.Detail = Failed, err.Error()
			return
		}
		res.Attempts = attempt
		if a.Class == plan.Destructive {
			before := e.recs[a.ID]
			if err := e.recordRun(a); err != nil {
				res.Status, res.Detail = Refused, fmt.Sprintf("cannot record the run first, so it could run twice: %v", err)
				return
			}
			defer e.recordOutcome(ctx, a, before, res)
		}
		e.applied(a)
		err := e.apply(ctx, a, res)
		var refused *hostio.RefusedError
		switch {
		case errors.As(err, &refused):
			res.Status, res.Detail = Refused, err.Error()
			log.Warn("action refused", "err", err)
			return
		case err == nil:
			err = verified(ctx, a, verify)
			if err == nil {
				res.Status, res.Detail = Converged, ""
				log.Info("action converged", "attempts", attempt)
				return
			}
		}
		res.Detail = err.Error()
		if ctx.Err() != nil {
			res.Status = Failed // interrupted (shutdown): not stuck, tried again by the next process
			return
		}
		log.Warn("action did not converge", "attempt", attempt, "err", err)
		if m.Once {
			res.Status = Failed
			return
		}
		if a.Class == plan.Destructive {
			break // never retried
		}
		if attempt == e.opts.MaxAttempts {
			break
		}
		select {
		case <-ctx.Done():
			res.Status = Failed
			return
		case <-e.Clock.After(wait):
		}
		wait = min(wait*2, e.opts.MaxBackoff)
	}
	e.markStuck(a, fp, fmt.Sprintf("not converged after %d attempt(s): %s", res.Attempts, res.Detail), res)
	log.Error("action stuck", "attempts", res.Attempts, "reason", res.Detail)
}

// markStuck marks a stuck in this process and in the records, so a restart
// does not try it again while nothing changed.
func (e *Executor) markStuck(a plan.Action, fp, reason string, res *Result) {
	e.stuck[a.ID] = stuckState{fingerprint: fp, reason: reason}
	now := e.Clock.Now().UTC()
	e.putLogged(a.ID, func(r *state.Action) {
		r.Stuck = &state.Stuck{Fingerprint: fp, Reason: reason, Since: now}
	})
	res.Status, res.Detail = Stuck, reason
}

// stuckFinding is the reconcile.stuck finding of a stuck action. A
// destructive one is never tried again by keel's loop: its remedy is the
// removal run by hand, which resumes where it stopped.
func stuckFinding(a plan.Action, reason string) plan.Finding {
	remedy := "look at why the kernel or LVM does not take the value; keel tries again when the desired or observed state changes, or when you run keel apply"
	if a.Class == plan.Destructive {
		remedy = fmt.Sprintf("see why it failed (journalctl -u keel, dmesg), then resume the removal by hand: keel wipe %s", a.Object)
	}
	return plan.Finding{
		ID: plan.ReconcileStuck, Severity: plan.Error, Object: a.Object,
		Message:  fmt.Sprintf("action %s is stuck: %s", a.ID, reason),
		Expected: a.Summary,
		Remedy:   remedy,
	}
}

// contentKey identifies what an action does (its ID, commands, sysfs
// writes, values): two applications with the same key set the same values.
// An action lists only the values the host lacks, so a host that undoes a
// different subset each time gives different keys; undoing the same values
// again and again, what flapping is, gives the same key.
func contentKey(a plan.Action) string {
	b, _ := json.Marshal(a) // plain data: cannot fail
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

// applied records an application of a for flap detection.
func (e *Executor) applied(a plan.Action) {
	if e.history[a.ID] == nil {
		e.history[a.ID] = map[string][]time.Time{}
	}
	k := contentKey(a)
	e.history[a.ID][k] = append(e.history[a.ID][k], e.Clock.Now())
}

// flapping reports whether one more application of a, with the same
// content, would be the FlapCount-th within FlapWindow. It drops the
// applications of a's ID older than FlapWindow, whatever their content.
func (e *Executor) flapping(a plan.Action) bool {
	now := e.Clock.Now()
	byContent := e.history[a.ID]
	for k, times := range byContent {
		var keep []time.Time
		for _, t := range times {
			if now.Sub(t) < e.opts.FlapWindow {
				keep = append(keep, t)
			}
		}
		if len(keep) == 0 {
			delete(byContent, k)
		} else {
			byContent[k] = keep
		}
	}
	return len(byContent[contentKey(a)]) >= e.opts.FlapCount-1
}

// takeToken waits for a token of the rate limiter.
func (e *Executor) takeToken(ctx context.Context) error {
	for {
		now := e.Clock.Now()
		if !e.lastFill.IsZero() {
			e.tokens += now.Sub(e.lastFill).Seconds() * e.opts.Limit
			if e.tokens > float64(e.opts.Burst) {
				e.tokens = float64(e.opts.Burst)
			}
		}
		e.lastFill = now
		if e.tokens >= 1 {
			e.tokens--
			return nil
		}
		need := time.Duration((1 - e.tokens) / e.opts.Limit * float64(time.Second))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-e.Clock.After(need):
		}
	}
}

// verified asks verify whether the findings a remedies are gone.
func verified(ctx context.Context, a plan.Action, verify Verify) error {
	if verify == nil || len(a.Remedies) == 0 {
		return nil
	}
	fs, err := verify(ctx, a)
	if err != nil {
		return fmt.Errorf("re-probe after %s: %w", a.ID, err)
	}
	want := map[string]bool{}
	for _, k := range a.Remedies {
		want[k] = true
	}
	var left []string
	for _, f := range fs {
		if want[f.Key()] {
			s := f.Key()
			if f.Observed != "" {
				s += " (observed " + f.Observed + ")"
			}
			left = append(left, s)
		}
	}
	if len(left) > 0 {
		sort.Strings(left)
		return fmt.Errorf("still present after apply: %s", strings.Join(left, ", "))
	}
	return nil
}

func (e *Executor) apply(ctx context.Context, a plan.Action, res *Result) error {
	switch a.Kind {
	case plan.KindCommand:
		return e.runCommands(ctx, a, res)
	case plan.KindSysfs:
		if e.Sysfs == nil {
			return fmt.Errorf("action %s: no sysfs applier configured", a.ID)
		}
		return e.Sysfs(ctx, a)
	case plan.KindLVMConf:
		if e.LVMConf == nil || a.LVMConf == nil {
			return fmt.Errorf("action %s: no lvm.conf applier or change", a.ID)
		}
		return e.LVMConf(ctx, *a.LVMConf)
	case plan.KindFile:
		if e.Files == nil || len(a.Files) == 0 {
			return fmt.Errorf("action %s: no file applier or files", a.ID)
		}
		if err := e.Files(ctx, a.Files); err != nil {
			return err
		}
		// The files are the change; the commands after them only tell a
		// daemon to read them now (reconcile.UdevReload), and one too busy
		// to answer reads them on its own: log, do not fail and retry.
		if err := e.runCommands(ctx, a, res); err != nil {
			e.Log.Warn("files written, the reload after them failed; the daemon reads them on its own later", "action", a.ID, "object", a.Object, "err", err)
		}
		return nil
	case plan.KindWipe:
		if e.Wipe == nil || a.Wipe == nil {
			return fmt.Errorf("action %s: no wiper or wipe spec", a.ID)
		}
		return e.Wipe(ctx, *a.Wipe)
	}
	return fmt.Errorf("action %s: unknown kind %q", a.ID, a.Kind)
}

func (e *Executor) runCommands(ctx context.Context, a plan.Action, res *Result) error {
	cmds := a.Commands
	if a.Class == plan.Maintenance {
		cmds = maintenanceWrap(a)
	}
	for i, argv := range cmds {
		if e.Starting != nil {
			if err := e.Starting(a, argv); err != nil {
				return fmt.Errorf("action %s: %w", a.ID, err)
			}
		}
		if err := e.run(ctx, argv, res); err != nil {
			if a.Class == plan.Maintenance {
				// Whatever failed, bring the stack back up: run the
				// activations that were still to come.
				for _, rest := range cmds[i+1:] {
					if !isActivation(rest, "y") {
						continue
					}
					if aerr := e.run(ctx, rest, res); aerr != nil {
						e.Log.Error("reactivation after a failed maintenance change failed", "object", a.Object, "command", shell.Join(rest), "err", aerr)
					}
				}
			}
			return fmt.Errorf("action %s: %w", a.ID, err)
		}
	}
	return nil
}

func (e *Executor) run(ctx context.Context, argv []string, res *Result) error {
	if err := hostio.ValidateArgv(argv); err != nil {
		return &hostio.RefusedError{Reason: err.Error()}
	}
	res.Commands = append(res.Commands, argv)
	// The long LVM commands run to their end, whatever the runner's
	// timeout or ctx say (hostio.Bound).
	c := hostio.Cmd{Name: argv[0], Args: argv[1:], Timeout: hostio.Bound(argv)}
	r, err := e.Runner.Run(ctx, c)
	if err != nil {
		return err
	}
	return r.Err(c)
}

// maintenanceWrap deactivates the object, runs the change and activates
// it again, unless the planner's commands already start by deactivating.
func maintenanceWrap(a plan.Action) [][]string {
	if len(a.Commands) > 0 && isActivation(a.Commands[0], "n") {
		return a.Commands
	}
	out := [][]string{{"lvchange", "-an", a.Object}}
	out = append(out, a.Commands...)
	return append(out, []string{"lvchange", "-ay", a.Object})
}

// isActivation reports whether argv is an lvchange or vgchange that sets
// activation to state ("y" or "n").
func isActivation(argv []string, state string) bool {
	if len(argv) == 0 || (argv[0] != "lvchange" && argv[0] != "vgchange") {
		return false
	}
	for i, s := range argv[1:] {
		if s == "-a"+state || s == "--activate="+state {
			return true
		}
		if (s == "-a" || s == "--activate") && i+2 < len(argv) && argv[i+2] == state {
			return true
		}
	}
	return false
}
