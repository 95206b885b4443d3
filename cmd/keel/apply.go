package main

import (
	"context"
	"encoding/json"
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
	"github.com/keel-storage/keel/probes"
	"github.com/keel-storage/keel/reconcile"
	"github.com/keel-storage/keel/reconcile/converge"
	"github.com/keel-storage/keel/reconcile/executor"
	"github.com/keel-storage/keel/schema"
)

func init() {
	register(command{name: "apply", summary: "converge the host to the desired state once", run: runApply})
}

// runApply implements keel apply. Exit 0: converged (no finding at warning
// or above left, nothing stuck or refused); 1: findings at warning or above
// remain, or actions are stuck or refused; 2: keel could not run (bad
// flags, invalid or unreadable desired state, failed probe).
func runApply(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("apply", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var configs multiFlag
	desiredFlag(fs, &configs)
	node := fs.String("node", "", "replay the node `SNAPSHOT` instead of probing this host (implies --dry-run)")
	dryRun := fs.Bool("dry-run", false, "say what would run, run nothing")
	maint := fs.Bool("maintenance", false, "also apply maintenance actions (the pool is stopped; refused while any LV on it is open)")
	format := fs.String("format", "text", "output `format`: text or json")
	timeout := fs.Duration("timeout", 5*time.Minute, "per-command timeout")
	cmdLog := fs.String("command-log", "", "append every command keel runs, one argv per line (JSON), to `FILE`")
	verbose := fs.Bool("v", false, "log what the executor does on stderr")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: keel apply [-c PATH] [--dry-run] [--maintenance] [--node SNAPSHOT] [--format text|json]")
		fmt.Fprintln(stderr, "\nProbes the host, plans, applies each action, re-probes and verifies it converged.")
		fmt.Fprintln(stderr, "Exit status: 0 converged, 1 findings at warning or above remain or actions are stuck or refused,")
		fmt.Fprintln(stderr, "2 could not run (invalid desired state, failed probe).")
		fs.PrintDefaults()
	}
	if code, ok := parseArgs(fs, args, exitError); !ok {
		return code
	}
	if fs.NArg() != 0 || (*format != "text" && *format != "json") {
		fs.Usage()
		return exitError
	}
	src, err := probes.NodeSource(*node, *timeout)
	if err != nil {
		fmt.Fprintf(stderr, "keel apply: %v\n", err)
		return exitError
	}
	if *node != "" {
		*dryRun = true
	}
	lvl := hclog.Warn
	if *verbose {
		lvl = hclog.Info
	}
	log := hclog.New(&hclog.LoggerOptions{Name: "keel", Level: lvl, Output: stderr})
	runner := src.Runner
	if *cmdLog != "" {
		cl, err := newCommandLog(*cmdLog, runner)
		if err != nil {
			fmt.Fprintf(stderr, "keel apply: %v\n", err)
			return exitError
		}
		defer cl.Close()
		runner = cl
		src.Runner = cl
	}
	a := converge.New(configs, converge.Wiring{Source: src, Runner: runner, Log: log})
	if err := a.Load(); err != nil {
		fmt.Fprintf(stderr, "keel apply: %s\n", describeLoadError(err))
		return exitError
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := a.Converge(ctx, executor.Mode{Maintenance: *maint, DryRun: *dryRun, Retry: true})
	if err != nil {
		fmt.Fprintf(stderr, "keel apply: %v\n", err)
		return exitError
	}
	if *format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			Results  []executor.Result   `json:"results"`
			Findings []reconcile.Finding `json:"findings"`
		}{res.Report.Results, res.Findings}); err != nil {
			fmt.Fprintf(stderr, "keel apply: %v\n", err)
			return exitError
		}
	} else {
		writeApplyText(stdout, res, *dryRun)
	}
	return applyExit(res)
}

// applyExit maps a pass to keel apply's exit status.
func applyExit(res converge.PassResult) int {
	if res.Report.Count(executor.Stuck)+res.Report.Count(executor.Refused)+res.Report.Count(executor.Failed) > 0 {
		return exitFindings
	}
	if w, ok := res.Worst(); ok && w >= reconcile.Warning {
		return exitFindings
	}
	return exitOK
}

func writeApplyText(w io.Writer, res converge.PassResult, dryRun bool) {
	if len(res.Report.Results) == 0 {
		fmt.Fprintln(w, "no actions")
	}
	for _, r := range res.Report.Results {
		line := fmt.Sprintf("%-9s %s: %s", r.Status, r.Action.ID, r.Action.Summary)
		if r.Detail != "" {
			line += " (" + r.Detail + ")"
		}
		fmt.Fprintln(w, line)
		if dryRun && r.Status == executor.Planned {
			for _, c := range r.Action.Commands {
				fmt.Fprintf(w, "          $ %s\n", probes.ShellJoin(c))
			}
			for _, s := range r.Action.Writes {
				fmt.Fprintf(w, "          %s <- %s\n", s.Path, s.Value)
			}
		}
	}
	n := 0
	for _, f := range res.Findings {
		if f.Severity < reconcile.Warning {
			continue
		}
		if n == 0 {
			fmt.Fprintln(w, "\nremaining findings:")
		}
		n++
		fmt.Fprintf(w, "  %-8s %s %s: %s\n", f.Severity, f.ID, f.Object, f.Message)
	}
	if n == 0 && !dryRun {
		fmt.Fprintln(w, "converged")
	}
}

// describeLoadError renders an invalid desired state with every problem.
func describeLoadError(err error) string {
	var invalid *schema.Error
	if errors.As(err, &invalid) {
		var b strings.Builder
		fmt.Fprintf(&b, "invalid desired state (%d problems):", len(invalid.Problems))
		for _, p := range invalid.Problems {
			b.WriteString("\n  " + p.String())
		}
		return b.String()
	}
	return err.Error()
}

// commandLog records every command run through it, as one JSON argv per
// line, so a test can prove what ran (and that a second apply ran nothing
// mutating).
type commandLog struct {
	inner probes.Runner
	f     *os.File
}

func newCommandLog(path string, inner probes.Runner) (*commandLog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("command log %s: %w", path, err)
	}
	return &commandLog{inner: inner, f: f}, nil
}

// Run logs cmd, then runs it. A command that could not be logged is not
// run: the log is the proof of what keel ran.
func (c *commandLog) Run(ctx context.Context, cmd probes.Cmd) (probes.Result, error) {
	b, _ := json.Marshal(cmd.Argv()) // strings only: cannot fail
	if _, err := c.f.Write(append(b, '\n')); err != nil {
		return probes.Result{ExitCode: -1}, fmt.Errorf("command log %s: %s not run: %w", c.f.Name(), cmd, err)
	}
	return c.inner.Run(ctx, cmd)
}

func (c *commandLog) Close() error { return c.f.Close() }
