// Package alerts turns each pass's findings into transitions — raised when
// a finding appears (or its severity changes), cleared when it goes — and
// sends only those transitions on: to the log (journald, with the finding's
// fields and its severity as priority), to optional exec hooks, and to a
// Prometheus textfile that also carries the daemon's health metrics.
package alerts

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/reconcile/plan"
	"github.com/keel-storage/keel/reconcile/report"
)

// Kind is the direction of a transition.
type Kind string

// Transition kinds.
const (
	Raised  Kind = "raised"
	Cleared Kind = "cleared"
)

// Transition is one change of a finding's state.
type Transition struct {
	Kind    Kind         `json:"transition"`
	Finding plan.Finding `json:"finding"`
}

// Tracker remembers the active findings between passes.
type Tracker struct {
	active map[string]plan.Finding
}

// NewTracker returns a Tracker with nothing active.
func NewTracker() *Tracker { return &Tracker{active: map[string]plan.Finding{}} }

// Update takes the complete findings of a pass and returns the
// transitions since the previous one, cleared first, each group sorted by key.
func (t *Tracker) Update(findings []plan.Finding) []Transition {
	now := map[string]plan.Finding{}
	for _, f := range findings {
		now[f.Key()] = f
	}
	var cleared, raised []Transition
	for k, f := range t.active {
		if _, ok := now[k]; !ok {
			cleared = append(cleared, Transition{Cleared, f})
		}
	}
	for k, f := range now {
		if old, ok := t.active[k]; !ok || old.Severity != f.Severity {
			raised = append(raised, Transition{Raised, f})
		}
	}
	t.active = now
	byKey := func(ts []Transition) {
		sort.Slice(ts, func(i, j int) bool { return ts[i].Finding.Key() < ts[j].Finding.Key() })
	}
	byKey(cleared)
	byKey(raised)
	return append(cleared, raised...)
}

// Active returns the findings currently raised, sorted by key.
func (t *Tracker) Active() []plan.Finding {
	out := make([]plan.Finding, 0, len(t.active))
	for _, f := range t.active {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out
}

// Log writes one line per transition: raised at the finding's severity
// (the journald sink turns the severity field into the priority), cleared
// at info.
func Log(log hclog.Logger, ts []Transition) {
	for _, tr := range ts {
		f := tr.Finding
		args := []interface{}{"finding", f.ID, "object", f.Object, "severity", f.Severity.String(),
			"message", f.Message, "expected", f.Expected, "observed", f.Observed}
		if f.Undeclared {
			// A pool the desired state does not declare, audited against
			// the reference rules (agent.auditUndeclared).
			args = append(args, "undeclared", true)
		}
		switch {
		case tr.Kind == Cleared:
			log.Info("finding cleared", args[:6]...)
		case f.Severity >= plan.Error:
			log.Error("finding raised", args...)
		case f.Severity == plan.Warning:
			log.Warn("finding raised", args...)
		default:
			log.Info("finding raised", args...)
		}
	}
}

// Hook runs an exec hook for each transition: argv (an absolute program
// path and its arguments, from alerts.exec), the finding in the
// environment (KEEL_ALERT, KEEL_FINDING_ID, KEEL_OBJECT, KEEL_SEVERITY,
// KEEL_MESSAGE, KEEL_EXPECTED, KEEL_OBSERVED, KEEL_REMEDY, KEEL_UNDECLARED
// "true" or "false", as the metric's undeclared label) and the
// transition as JSON on stdin. It runs through the same probes.Runner as
// every other child process of keel, under its own policy: any absolute
// program (it is the operator's, not an LVM command, so the executor's
// allowlist does not apply), a timeout of its own, and a failure that is
// logged, never retried.
type Hook struct {
	Argv    []string
	Timeout time.Duration // per run; default 10s
	// Runner runs the hook; nil means probes.ExecRunner.
	Runner hostio.Runner
}

// Validate checks the hook's argv.
func (h Hook) Validate() error {
	if len(h.Argv) == 0 {
		return fmt.Errorf("alerts.exec: empty")
	}
	if !filepath.IsAbs(h.Argv[0]) {
		return fmt.Errorf("alerts.exec: %q is not an absolute path", h.Argv[0])
	}
	return nil
}

// Run runs the hook once per transition, in order, and returns the first
// error (a hook that fails does not stop the others).
func (h Hook) Run(ctx context.Context, ts []Transition) error {
	if err := h.Validate(); err != nil {
		return err
	}
	timeout := h.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	var first error
	for _, tr := range ts {
		if err := h.one(ctx, tr, timeout); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (h Hook) one(ctx context.Context, tr Transition, timeout time.Duration) error {
	in, _ := json.Marshal(tr) // plain data: cannot fail
	f := tr.Finding
	c := hostio.Cmd{Name: h.Argv[0], Args: h.Argv[1:], Timeout: timeout, Stdin: append(in, '\n'),
		Env: []string{"KEEL_ALERT=" + string(tr.Kind), "KEEL_FINDING_ID=" + string(f.ID), "KEEL_OBJECT=" + f.Object,
			"KEEL_SEVERITY=" + f.Severity.String(), "KEEL_MESSAGE=" + f.Message,
			"KEEL_EXPECTED=" + f.Expected, "KEEL_OBSERVED=" + f.Observed, "KEEL_REMEDY=" + f.Remedy,
			"KEEL_UNDECLARED=" + report.UndeclaredLabel(f)}}
	var r hostio.Runner = hostio.ExecRunner{}
	if h.Runner != nil {
		r = h.Runner
	}
	res, err := r.Run(ctx, c)
	if err == nil {
		err = res.Err(c)
	}
	if err != nil {
		out := bytes.TrimSpace(append(res.Stdout, res.Stderr...))
		return fmt.Errorf("alerts.exec %s for %s %s: %w: %s", h.Argv[0], tr.Kind, f.Key(), err, out)
	}
	return nil
}
