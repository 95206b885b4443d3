package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/reconcile/activation"
	"github.com/keel-storage/keel/reconcile/converge"
	"github.com/keel-storage/keel/reconcile/plan"
	"github.com/keel-storage/keel/schema/spec"
)

// runUdevRules implements keel udev-rules. Exit 0: printed, written, or
// (with --check) installed files match; 1: --check found drift; 2: keel
// could not run (bad flags, not root for --write to /, missing or invalid
// desired state, probe, write), or --check could not read a file and found
// no drift in the other.
func runUdevRules(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("udev-rules", "",
		"Prints the two udev rules files keel keeps from the desired state:",
		"  "+activation.PVScanRule+"  LVM_PVSCAN_ON_LVS=1 for keel's LVs under stacked VGs",
		"  "+activation.BcacheRule+"          the declared bcache tunables, set at registration",
		"--write installs them (as root, unless --root names another directory); in audit mode",
		"(agent.mode \"audit\") it writes nothing and says so.",
		"Exit status: 0 ok, 1 drift (--check), 2 could not run (bad flags, not root, missing or",
		"invalid desired state, failed probe or write).")
	var configs multiFlag
	desiredFlag(fs, &configs)
	node := fs.String("node", "", "generate for the node `SNAPSHOT` instead of this host")
	check := fs.Bool("check", false, "compare the installed files with the generated ones; exit 1 on drift")
	write := fs.Bool("write", false, "install the generated files (atomic rename) and reload udev's rules")
	root := fs.String("root", "/", "install under `DIR` instead of / (packaging, tests); udev is reloaded only for /")
	timeout := fs.Duration("timeout", time.Minute, "per-command timeout")
	if code, ok := parseArgs(fs, args, stdout, stderr); !ok {
		return code
	}
	if code := noArgs(fs, stderr); code != exitOK {
		return code
	}
	switch {
	case *check && *write:
		return usageError(fs, stderr, "--check and --write exclude each other")
	case *write && *node != "":
		return usageError(fs, stderr, "--write installs on this host, not on a node snapshot (--node)")
	case *write && filepath.Clean(*root) == "/" && !requireRoot("udev-rules", args, "leave out --write to print the rules", stderr):
		return exitError
	}
	cfg, src, h, code := loadAndProbe("udev-rules", configs, *node, *timeout, stderr)
	if cfg == nil {
		return code
	}
	ctx := context.Background()
	// The holds of this host leave their bcache devices out, as the
	// daemon's rule does (a node snapshot is another host: none).
	mem := plan.Memory{FirstPass: true, Now: time.Now()}
	if *node == "" {
		mem = liveHolds(mem)
	}
	files, err := activation.RulesHeld(cfg, h, converge.LinkResolver(src.FS), plan.HeldBcache(cfg, h, mem))
	if err != nil {
		fmt.Fprintf(stderr, "keel udev-rules: %v\n", err)
		return exitError
	}
	for _, f := range files {
		for _, n := range f.Notes {
			fmt.Fprintf(stderr, "keel udev-rules: %s\n", n)
		}
	}
	switch {
	case *check:
		// The planner judges the rules as keel check does: a file the
		// probe pass could not read (or a snapshot did not record) is not
		// evaluated rather than called missing.
		res := plan.PlanWith(cfg, h, mem)
		drift := 0
		for _, f := range res.Findings {
			if path, ok := strings.CutPrefix(f.Object, "udev:"); ok {
				fmt.Fprintf(stdout, "%-8s %s %s: %s\n", f.Severity, f.ID, path, f.Message)
				drift++
			}
		}
		for _, p := range model.UdevRulePaths {
			if kf := h.KeelFiles[p]; kf != nil && kf.Unknown != "" {
				fmt.Fprintf(stderr, "keel udev-rules: %s: not judged: %s\n", p, kf.Unknown)
			}
		}
		switch {
		case drift > 0:
			return exitFindings
		case len(res.NotEvaluated) > 0:
			return exitError
		}
		fmt.Fprintln(stdout, "udev rules in sync")
		return exitOK
	case *write && cfg.Agent.Mode == spec.AgentAudit:
		fmt.Fprintln(stdout, auditWroteNothing)
		return exitOK
	case *write:
		written, err := converge.InstallRules(ctx, files, *root, src.Runner)
		for _, p := range written {
			fmt.Fprintf(stdout, "wrote %s\n", p)
		}
		if err != nil {
			fmt.Fprintf(stderr, "keel udev-rules: %v\n", err)
			return exitError
		}
		if len(written) == 0 {
			fmt.Fprintln(stdout, "udev rules in sync")
		}
		return exitOK
	}
	for i, f := range files {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		fmt.Fprintf(stdout, "==> %s <==\n%s", f.Path, f.Content)
	}
	return exitOK
}

// auditWroteNothing is what keel udev-rules --write says in audit mode. It
// exits 0: the configuration management that runs it on every host
// (packaging/integrations) must not fail for a host keel only observes.
const auditWroteNothing = `keel udev-rules: agent.mode is "audit": wrote nothing; keel udev-rules --check shows the drift, agent.mode "converge" lets --write install the rules`

// loadAndProbe loads the desired state while it probes the host (or replays
// node). On failure it prints why and returns a nil config and exitError.
func loadAndProbe(name string, configs []string, node string, timeout time.Duration, stderr io.Writer) (*spec.Config, hostio.Source, *model.Host, int) {
	l, loadErr, probeErr := loadWhileProbing(configs, node, false, timeout, nil)
	switch {
	case loadErr != nil:
		fmt.Fprintf(stderr, "keel %s: %s\n", name, loadErrorText(name, configs, loadErr))
		return nil, hostio.Source{}, nil, exitError
	case probeErr != nil:
		fmt.Fprintf(stderr, "keel %s: %s\n", name, probeErrorText(probeErr))
		return nil, hostio.Source{}, nil, exitError
	}
	return l.cfg, l.src, l.host, exitOK
}
