package main

import (
	"fmt"
	"io"
	"time"

	"github.com/keel-storage/keel/reconcile/report"
)

// runPlan implements keel plan. Exit 0: the plan was printed (empty or
// not); 2: keel could not plan (bad flags, invalid desired state, failed
// probe). keel check is the command whose exit status says "converged".
func runPlan(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("plan", "",
		"Prints what keel apply would do: live, maintenance, immutable (report only) and destructive actions.",
		"Exit status: 0 plan printed (empty or not; keel check says whether the host is converged),",
		"2 could not plan (bad flags, missing or invalid desired state, failed probe).")
	var configs multiFlag
	desiredFlag(fs, &configs)
	node := fs.String("node", "", "replay the node `SNAPSHOT` instead of probing this host")
	format := choice(fs, "format", "output `format`: text or json", "text", "json")
	timeout := fs.Duration("timeout", 60*time.Second, "per-command timeout of the probe")
	if code, ok := parseArgs(fs, args, stdout, stderr); !ok {
		return code
	}
	if code := noArgs(fs, stderr); code != exitOK {
		return code
	}
	j, err := judge("plan", configs, *node, false, *timeout)
	if err != nil {
		fmt.Fprintf(stderr, "keel plan: %v\n", err)
		return exitError
	}
	pr := report.NewPlanReport(report.HostInfo{Name: hostName(j.host, *node), Mode: j.mode, CPUs: j.host.CPUs,
		MemoryBytes: j.host.Memory.TotalBytes}, j.result)
	write := pr.WriteText
	if *format == "json" {
		write = pr.WriteJSON
	}
	if err := write(stdout); err != nil {
		fmt.Fprintf(stderr, "keel plan: %v\n", err)
		return exitError
	}
	return exitOK
}
