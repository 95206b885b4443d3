package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/probes/shell"
	"github.com/keel-storage/keel/reconcile/apply/executor"
	"github.com/keel-storage/keel/reconcile/apply/lvmconf"
	"github.com/keel-storage/keel/reconcile/converge"
	"github.com/keel-storage/keel/reconcile/plan"
	"github.com/keel-storage/keel/schema/spec"
)

// runApply implements keel apply. Exit 0: converged (no finding at warning
// or above left, nothing stuck or refused); 1: findings at warning or above
// remain, or actions are stuck or refused; 2: keel could not run (bad
// flags, invalid or unreadable desired state, failed probe).
func runApply(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("apply", "",
		"Probes the host, plans, applies each action, re-probes and verifies it converged.",
		"--dry-run prints each action's commands and sysfs writes, and a unified diff of each file it",
		"would write, and changes nothing. Without --dry-run or --node keel must run as root.",
		"In audit mode (agent.mode \"audit\") only --dry-run runs; without it keel apply changes nothing.",
		"Exit status: 0 converged, 1 findings at warning or above remain or actions are stuck, refused",
		"or failed, or refused in audit mode, 2 could not run (bad flags, not root, missing or invalid",
		"desired state, failed probe).")
	var configs multiFlag
	desiredFlag(fs, &configs)
	node := fs.String("node", "", "replay the node `SNAPSHOT` instead of probing this host (implies --dry-run)")
	dryRun := fs.Bool("dry-run", false, "say what would run, run nothing")
	maint := fs.Bool("maintenance", false, "also apply maintenance actions (the pool is stopped; refused while any LV on it is open)")
	format := choice(fs, "format", "output `format`: text or json", "text", "json")
	timeout := fs.Duration("timeout", 5*time.Minute, "per-command timeout; pvmove, lvconvert, lvextend, lvresize and activations have none (docs/operations.md)")
	cmdLog := fs.String("command-log", "", "append every command keel runs, one argv per line (JSON), to `FILE`")
	verbose := fs.Bool("v", false, "log what the executor does on stderr")
	if code, ok := parseArgs(fs, args, stdout, stderr); !ok {
		return code
	}
	if code := noArgs(fs, stderr); code != exitOK {
		return code
	}
	if !*dryRun && *node == "" && !requireRoot("apply", args, "add --dry-run to see what it would do", stderr) {
		return exitError
	}
	src, err := hostio.NodeSource(*node, *timeout, liveOptions())
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
	src = withLVMConfigCache(src, *node) // above the command log: a cached answer ran nothing
	// A live apply keeps a copy of the desired state once it loads, for
	// keel activate at the next boot (converge.LastGoodFile),
	// and of its validated form (stateCache).
	live := *node == "" && !*dryRun
	w := converge.Wiring{Source: src, Runner: runner, Log: log, KeepLastGood: live, StateDir: stateDir()}
	if live {
		w.Cache = stateCache()
	}
	a := converge.New(configs, w)
	if err := a.Load(a.Read()); err != nil {
		fmt.Fprintf(stderr, "keel apply: %s\n", loadErrorText("apply", configs, err))
		return exitError
	}
	if !*dryRun && a.Desired().Agent.Mode == spec.AgentAudit {
		// Audit mode changes nothing, from any entry point: the daemon's
		// passes are dry runs, and so would be this one.
		fmt.Fprintln(stderr, `keel apply: agent.mode is "audit" in the desired state: nothing changed; keel apply --dry-run shows what it would do, agent.mode "converge" lets it`)
		return exitFindings
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := a.Converge(ctx, converge.Options{Mode: executor.Mode{Maintenance: *maint, DryRun: *dryRun, Retry: true}})
	if err != nil {
		fmt.Fprintf(stderr, "keel apply: %s\n", probeErrorText(err))
		return exitError
	}
	if *format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false) // a remedy is a shell command: && stays &&
		// No result or no finding is an empty list, not null.
		results, findings := res.Report.Results, res.Findings
		if results == nil {
			results = []executor.Result{}
		}
		if findings == nil {
			findings = []plan.Finding{}
		}
		if err := enc.Encode(struct {
			Results  []executor.Result `json:"results"`
			Findings []plan.Finding    `json:"findings"`
		}{results, findings}); err != nil {
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
	if w, ok := res.Worst(); ok && w >= plan.Warning {
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
				fmt.Fprintf(w, "          $ %s\n", shell.Join(c))
			}
			for _, s := range r.Action.Writes {
				fmt.Fprintf(w, "          %s <- %s\n", s.Path, s.Value)
			}
			for _, d := range fileDiffs(r.Action, res.Host) {
				for _, l := range strings.Split(strings.TrimSuffix(d, "\n"), "\n") {
					fmt.Fprintf(w, "          %s\n", l)
				}
			}
		}
	}
	for _, f := range res.Findings {
		// An info finding only the writing pass raises (keel cannot read
		// the initramfs afterwards): said here, or never.
		if f.ID == plan.LVMInitramfsStale {
			fmt.Fprintf(w, "\nnote: %s\n      remedy: %s\n", f.Message, f.Remedy)
		}
	}
	n := 0
	for _, f := range res.Findings {
		if f.Severity < plan.Warning {
			continue
		}
		if n == 0 {
			fmt.Fprintln(w, "\nremaining findings:")
		}
		n++
		fmt.Fprintf(w, "  %-8s %s %s: %s\n", f.Severity, f.ID, f.Object, f.Message)
		if f.Remedy != "" {
			fmt.Fprintf(w, "           remedy: %s\n", f.Remedy)
		}
	}
	if n == 0 && !dryRun {
		fmt.Fprintln(w, "converged")
	}
}

// commandLog records every command run through it, as one JSON argv per
// line, so a test can prove what ran (and that a second apply ran nothing
// mutating).
type commandLog struct {
	inner hostio.Runner
	f     *os.File
}

func newCommandLog(path string, inner hostio.Runner) (*commandLog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("command log %s: %w", path, err)
	}
	return &commandLog{inner: inner, f: f}, nil
}

// Run logs cmd, then runs it. A command that could not be logged is not
// run: the log is the proof of what keel ran.
func (c *commandLog) Run(ctx context.Context, cmd hostio.Cmd) (hostio.Result, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)   // the argv as typed: && stays &&
	_ = enc.Encode(cmd.Argv()) // strings only: cannot fail; ends in a newline
	if _, err := c.f.Write(b.Bytes()); err != nil {
		return hostio.Result{ExitCode: -1}, fmt.Errorf("command log %s: %s not run: %w", c.f.Name(), cmd, err)
	}
	return c.inner.Run(ctx, cmd)
}

func (c *commandLog) Close() error { return c.f.Close() }

// fileDiffs returns, for each file action a would write (lvm.conf, keel's
// udev rules), the unified diff from the file as the probe read it on h to
// what keel would write, or a line saying why there is none.
func fileDiffs(a plan.Action, h *model.Host) []string {
	var out []string
	if a.LVMConf != nil && h != nil {
		// The writer puts a setting lvmlocal.conf assigns there (lvmconf.Route).
		localPath := filepath.Join(filepath.Dir(lvmconf.DefaultPath), lvmconf.LocalName)
		mainCh, localCh, err := lvmconf.Route(*a.LVMConf, []byte(h.LVMConfig.LVMLocalConf))
		if err != nil {
			out = append(out, fmt.Sprintf("%s: no diff: %v", localPath, err))
		}
		for _, f := range []struct {
			path, before string
			ch           plan.LVMConfChange
		}{{lvmconf.DefaultPath, h.LVMConfig.LVMConf, mainCh}, {localPath, h.LVMConfig.LVMLocalConf, localCh}} {
			after, changed, err := lvmconf.Edit([]byte(f.before), f.ch)
			switch {
			case err != nil:
				out = append(out, fmt.Sprintf("%s: no diff: %v", f.path, err))
			case changed && f.before == "":
				out = append(out, fmt.Sprintf("%s: no diff: the probe could not read the file", f.path))
			case changed:
				out = append(out, unifiedDiff(f.path, f.before, string(after)))
			}
		}
	}
	for _, f := range a.Files {
		before := ""
		if h != nil {
			if kf := h.KeelFiles[f.Path]; kf != nil && kf.Unknown != "" {
				out = append(out, fmt.Sprintf("%s: no diff: %s", f.Path, kf.Unknown))
				continue
			} else if kf != nil {
				before = kf.Content
			}
		}
		if d := unifiedDiff(f.Path, before, f.Content); d != "" {
			out = append(out, d)
		}
	}
	return out
}
