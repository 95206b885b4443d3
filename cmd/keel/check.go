package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/keel-storage/keel/reconcile/atomicfile"
	"io"
	"time"

	"github.com/keel-storage/keel/cmd/keel/internal/desiredcache"
	"github.com/keel-storage/keel/probes"
	"github.com/keel-storage/keel/reconcile"
	"github.com/keel-storage/keel/schema"
)

func init() {
	register(command{name: "check", summary: "compare the host with the desired state (or audit it) and list findings", run: runCheck})
}

// checkFormats are the output forms of keel check.
var checkFormats = map[string]func(reconcile.Report, io.Writer) error{
	"text":       reconcile.Report.WriteText,
	"json":       reconcile.Report.WriteJSON,
	"junit":      reconcile.Report.WriteJUnit,
	"prometheus": reconcile.Report.WritePrometheus,
}

// judged is one host judged by the planner.
type judged struct {
	host   *probes.Host
	result reconcile.Result
	mode   string
}

// judge loads the desired state (unless audit), probes the host or replays
// the node snapshot (both at once, see loadWhileProbing), and runs the
// planner. Errors mean keel could not judge the host: an invalid or
// unreadable desired state, or a failed probe.
func judge(configs []string, node string, audit bool, timeout time.Duration) (judged, error) {
	l, loadErr, probeErr := loadWhileProbing(configs, node, audit, timeout)
	var invalid *schema.Error
	switch {
	case errors.As(loadErr, &invalid):
		return judged{}, fmt.Errorf("invalid desired state (%d problems):\n%w", len(invalid.Problems), invalid)
	case loadErr != nil:
		return judged{}, fmt.Errorf("desired state: %w", loadErr)
	case probeErr != nil:
		return judged{}, probeErr
	case audit:
		return judged{host: l.host, result: reconcile.Audit(l.host), mode: "audit"}, nil
	}
	return judged{host: l.host, result: reconcile.PlanWith(l.cfg, l.host, checkMemory(node)), mode: "desired"}, nil
}

// loadedHost is a desired state and the host it is to be judged against.
type loadedHost struct {
	cfg  *schema.Config // nil in an audit
	src  probes.Source
	host *probes.Host
}

// loadWhileProbing loads the desired state (unless audit) while the probe
// pass runs (the probe only reads the host). An unchanged desired state comes
// from the desired-state cache (package desiredcache) without a CUE
// evaluation, which would compete with the probe's commands for the CPUs.
// The load's error wins and cancels the probe, so an invalid desired state is
// reported the same whatever the probe found.
func loadWhileProbing(configs []string, node string, audit bool, timeout time.Duration) (l loadedHost, loadErr, probeErr error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	probeDone := make(chan error, 1)
	go func() {
		var err error
		if l.src, err = probes.NodeSource(node, timeout); err == nil {
			l.host, err = probes.Probe(ctx, l.src)
		}
		probeDone <- err
	}()
	if !audit {
		cfg, err := desiredcache.FromEnv().Load(schema.NewLoader(), schema.Paths(configs)...)
		if err != nil {
			cancel() // stop the probe's commands before returning
			<-probeDone
			return loadedHost{}, err, nil
		}
		l.cfg = cfg
	}
	if err := <-probeDone; err != nil {
		return loadedHost{}, nil, err
	}
	return l, nil, nil
}

// runCheck implements keel check. Exit 0: no finding at warning or above;
// 1: at least one; 2: keel could not check (bad flags, invalid desired
// state, failed probe, unwritable output).
func runCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var configs multiFlag
	desiredFlag(fs, &configs)
	node := fs.String("node", "", "replay the node `SNAPSHOT` instead of probing this host")
	audit := fs.Bool("audit", false, "judge the host against keel's reference rules, without a desired state")
	format := fs.String("format", "text", "output `format`: text, json, junit or prometheus")
	out := fs.String("o", "", "write the report to `FILE` atomically instead of stdout")
	timeout := fs.Duration("timeout", 60*time.Second, "per-command timeout of the probe")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: keel check [-c PATH] [--audit] [--node SNAPSHOT] [--format text|json|junit|prometheus] [-o FILE]")
		fmt.Fprintln(stderr, "\nLists what differs between the desired state and the host, with stable finding IDs (docs/findings.md).")
		fmt.Fprintln(stderr, "Exit status: 0 nothing at warning or above, 1 findings at warning or above, 2 could not check.")
		fs.PrintDefaults()
	}
	if code, ok := parseArgs(fs, args, exitError); !ok {
		return code
	}
	write, ok := checkFormats[*format]
	if !ok || fs.NArg() != 0 || (*audit && len(configs) > 0) {
		fs.Usage()
		return exitError
	}
	j, err := judge(configs, *node, *audit, *timeout)
	if err != nil {
		fmt.Fprintf(stderr, "keel check: %v\n", err)
		if *format == "prometheus" && *out != "" {
			var b bytes.Buffer
			if werr := reconcile.WritePrometheusFailure(&b); werr == nil {
				if werr := atomicfile.Write(*out, b.Bytes(), 0o644); werr != nil {
					fmt.Fprintf(stderr, "keel check: %s: %v\n", *out, werr)
				}
			}
		}
		return exitError
	}
	for _, e := range j.host.Errors {
		fmt.Fprintf(stderr, "keel check: probe: %s\n", e)
	}
	rep := reconcile.NewReport(reconcile.HostInfo{Name: j.host.Hostname, Mode: j.mode, CPUs: j.host.CPUs,
		MemoryBytes: j.host.Memory.TotalBytes}, j.result.Findings, j.result.Levels, j.result.NotEvaluated)
	if err := emit(*out, stdout, func(w io.Writer) error { return write(rep, w) }); err != nil {
		fmt.Fprintf(stderr, "keel check: %v\n", err)
		return exitError
	}
	if !rep.Summary.OK {
		return exitFindings
	}
	return exitOK
}

// emit writes through fn to stdout, or to path atomically (a temporary
// file in the same directory, renamed over path) when path is set.
func emit(path string, stdout io.Writer, fn func(io.Writer) error) error {
	if path == "" {
		return fn(stdout)
	}
	var b bytes.Buffer
	if err := fn(&b); err != nil {
		return err
	}
	if err := atomicfile.Write(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
