package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/reconcile/atomicfile"
	"github.com/keel-storage/keel/reconcile/plan"
	"github.com/keel-storage/keel/reconcile/report"
	"github.com/keel-storage/keel/schema/spec"

	"github.com/keel-storage/keel/probes"
	"github.com/keel-storage/keel/schema"
)

// checkFormats are the output forms of keel check.
var checkFormats = map[string]func(report.Report, io.Writer) error{
	"text":       report.Report.WriteText,
	"json":       report.Report.WriteJSON,
	"junit":      report.Report.WriteJUnit,
	"prometheus": report.Report.WritePrometheus,
}

// judged is one host judged by the planner.
type judged struct {
	host   *model.Host
	result plan.Result
	mode   string
}

// judge loads the desired state (unless audit), probes the host or replays
// the node snapshot (both at once, see loadWhileProbing), and runs the
// planner. Errors mean keel could not judge the host: a missing, invalid or
// unreadable desired state (described by loadErrorText for command name),
// or a failed probe (probeErrorText).
func judge(name string, configs []string, node string, audit bool, timeout time.Duration) (j judged, err error) {
	// keel's state depends on the desired state only: it is read while
	// the probe runs, not after it.
	var mem plan.Memory
	l, loadErr, probeErr := loadWhileProbing(configs, node, audit, timeout, func(cfg *spec.Config) {
		mem = checkMemory(cfg, node)
		phases.mark("state file")
	})
	if phases != nil && loadErr == nil && probeErr == nil {
		defer phases.mark("plan")
	}
	switch {
	case loadErr != nil:
		return judged{}, errors.New(loadErrorText(name, configs, loadErr))
	case probeErr != nil:
		return judged{}, errors.New(probeErrorText(probeErr))
	case audit:
		return judged{host: l.host, result: plan.Audit(l.host), mode: "audit"}, nil
	}
	mem = seeVGs(mem, l.cfg, l.host, node)
	phases.mark("vg records")
	return judged{host: l.host, result: plan.PlanWith(l.cfg, l.host, mem), mode: "desired"}, nil
}

// loadedHost is a desired state and the host it is to be judged against.
type loadedHost struct {
	cfg  *spec.Config // nil in an audit
	src  hostio.Source
	host *model.Host
}

// loadWhileProbing loads the desired state (unless audit) while the probe
// pass runs (the probe only reads the host). An unchanged desired state comes
// from the desired-state cache (package desiredcache) without a CUE
// evaluation, which would compete with the probe's commands for the CPUs.
// The load's error wins and cancels the probe, so an invalid desired state is
// reported the same whatever the probe found. loaded, when not nil, runs
// once the desired state is in, while the probe may still run.
func loadWhileProbing(configs []string, node string, audit bool, timeout time.Duration, loaded func(*spec.Config)) (l loadedHost, loadErr, probeErr error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	probeDone := make(chan error, 1)
	go func() {
		var err error
		if l.src, err = hostio.NodeSource(node, timeout, liveOptions()); err == nil {
			l.src = withLVMConfigCache(l.src, node)
			if phases != nil {
				l.src.Runner = timedRunner{l.src.Runner}
			}
			l.host, err = probes.Probe(ctx, l.src)
		}
		phases.mark("probe pass")
		probeDone <- err
	}()
	if !audit {
		cfg, err := desiredCache().Load(schema.NewLoader().LoadConfig, schema.Paths(configs)...)
		if err != nil {
			cancel() // stop the probe's commands before returning
			<-probeDone
			return loadedHost{}, err, nil
		}
		l.cfg = cfg
		phases.mark("desired state")
		if loaded != nil {
			loaded(cfg)
		}
	}
	if err := <-probeDone; err != nil {
		return loadedHost{}, nil, err
	}
	if l.cfg != nil {
		// The probe started before the desired state named its
		// storage.cfg: that part is read again at the configured path (a
		// replay keeps the path its snapshot recorded).
		opt := probes.Options{PVEStorageCfg: l.cfg.Proxmox.StorageConfig}
		if l.host.PVEStorageCfg != opt.PVEStorageCfg {
			probes.ProbeProxmox(l.src, l.host, opt)
		}
	}
	return l, nil, nil
}

// runCheck implements keel check. Exit 0: no finding at warning or above;
// 1: at least one; 2: keel could not check (bad flags, invalid desired
// state, failed probe, unwritable output).
func runCheck(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("check", "",
		"Lists what differs between the desired state and the host, with stable finding IDs (docs/findings.md).",
		"--audit judges the host against keel's reference rules instead, without a desired state.",
		"Exit status: 0 nothing at warning or above, 1 findings at warning or above, 2 could not check",
		"(bad flags, missing or invalid desired state, failed probe); with --format json, junit or",
		"prometheus a report that says the check failed is written even then.")
	var configs multiFlag
	desiredFlag(fs, &configs)
	node := fs.String("node", "", "replay the node `SNAPSHOT` instead of probing this host")
	audit := fs.Bool("audit", false, "judge the host against keel's reference rules, without a desired state")
	format := choice(fs, "format", "output `format`: text, json, junit or prometheus", "text", "json", "junit", "prometheus")
	out := fs.String("o", "", "write the report to `FILE` atomically instead of stdout")
	timeout := fs.Duration("timeout", 60*time.Second, "per-command timeout of the probe")
	if code, ok := parseArgs(fs, args, stdout, stderr); !ok {
		return code
	}
	if code := noArgs(fs, stderr); code != exitOK {
		return code
	}
	if *audit && len(configs) > 0 {
		return usageError(fs, stderr, "--audit takes no desired state (-c)")
	}
	write := checkFormats[*format]
	j, err := judge("check", configs, *node, *audit, *timeout)
	if err != nil {
		fmt.Fprintf(stderr, "keel check: %v\n", err)
		if *format != "text" {
			// A consumer of the document reads a failed check, not none.
			mode := "desired"
			if *audit {
				mode = "audit"
			}
			if werr := emit(*out, stdout, func(w io.Writer) error { return writeCheckFailure(*format, mode, err, w) }); werr != nil {
				fmt.Fprintf(stderr, "keel check: %v\n", werr)
			}
		}
		return exitError
	}
	for _, e := range j.host.Errors {
		fmt.Fprintf(stderr, "keel check: probe: %s\n", e)
	}
	rep := report.NewReport(report.HostInfo{Name: hostName(j.host, *node), Mode: j.mode, CPUs: j.host.CPUs,
		MemoryBytes: j.host.Memory.TotalBytes}, j.result.Findings, j.result.Levels, j.result.NotEvaluated)
	if err := emit(*out, stdout, func(w io.Writer) error { return write(rep, w) }); err != nil {
		fmt.Fprintf(stderr, "keel check: %v\n", err)
		return exitError
	}
	if phases != nil {
		phases.mark("report")
		fmt.Fprintf(stderr, "keel check: timing: %s\n", phases)
	}
	if !rep.Summary.OK {
		return exitFindings
	}
	return exitOK
}

// writeCheckFailure writes the report of a check that could not judge the
// host in format (json, junit or prometheus): the document says the check
// failed and why.
func writeCheckFailure(format, mode string, err error, w io.Writer) error {
	r := report.FailedReport(report.HostInfo{Mode: mode}, err)
	switch format {
	case "json":
		return r.WriteJSON(w)
	case "junit":
		return r.WriteJUnitFailure(w)
	}
	return report.WritePrometheusFailure(w)
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

// phases records when each part of a keel check ended, from the start of
// main, when KEEL_TIMING is set (e2e/bench's rounds print it): where a
// check's time goes beyond its probe commands. nil otherwise; main sets it.
var phases *phaseLog

// phaseLog is a list of named instants since mainStart; its methods are
// safe for concurrent use and do nothing on a nil phaseLog.
type phaseLog struct {
	mu    sync.Mutex
	marks []string
}

func newPhaseLog(on bool) *phaseLog {
	if !on {
		return nil
	}
	return &phaseLog{}
}

// mark records that phase what ended now.
func (p *phaseLog) mark(what string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.marks = append(p.marks, fmt.Sprintf("%s %dms", what, time.Since(mainStart).Milliseconds()))
}

// String lists the marks in the order they were made.
func (p *phaseLog) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return "ended, in ms since main started: " + strings.Join(p.marks, ", ")
}

// timedRunner marks in phases when each command of a probe pass started
// and ended (KEEL_TIMING): whether a check's time beyond `lvm fullreport`
// is spent before the report starts or after it ends.
type timedRunner struct{ inner hostio.Runner }

func (t timedRunner) what(c hostio.Cmd) string {
	if len(c.Args) > 0 {
		return c.Name + " " + c.Args[0]
	}
	return c.Name
}

// Run runs c through the wrapped runner between two marks.
func (t timedRunner) Run(ctx context.Context, c hostio.Cmd) (hostio.Result, error) {
	phases.mark(t.what(c) + " started")
	defer phases.mark(t.what(c) + " ended")
	return t.inner.Run(ctx, c)
}
