package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/keel-storage/keel/probes"
	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/schema"
)

// runSnapshot records a probe pass. Exit 0 when written (even if some
// objects could not be probed: their errors are in the snapshot), 2 when
// the snapshot could not be made or written. With --verify, also 2 when the
// live pass or the replay of the written snapshot failed, or when the two
// models differ; nothing is written then.
func runSnapshot(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("snapshot", "",
		"Records one probe pass of this host (every command keel runs and file it reads, with their",
		"output) into a txtar node snapshot, for bug reports and for --node in the other commands.",
		"Objects that could not be probed are recorded with their errors. With -c, the pass reads",
		"what that desired state points at (proxmox.storageConfig) instead of the default paths.",
		"Exit status: 0 written, 2 could not record or write it (bad flags, write error), or with",
		"--verify: the pass failed or its replay differs (then nothing is written).")
	var configs multiFlag
	fs.Var(&configs, "c", "desired-state `PATH` whose settings the pass follows (file or directory; repeatable; default none)")
	out := fs.String("o", "", "write the snapshot to `FILE` (default standard output)")
	node := fs.String("node", "", "re-record from the node `SNAPSHOT` instead of the live host")
	timeout := fs.Duration("timeout", 60*time.Second, "per-command timeout")
	verbose := fs.Bool("v", false, "print the time of the pass and of its slowest commands and file reads")
	withActivation := fs.Bool("activation-report", false, "also record the LVM report keel activate reads during lvm2's own activation at boot")
	verify := fs.Bool("verify", false, "replay the written snapshot and check it gives the same model as the pass that recorded it")
	if code, ok := parseArgs(fs, args, stdout, stderr); !ok {
		return code
	}
	if code := noArgs(fs, stderr); code != exitOK {
		return code
	}
	src, err := hostio.NodeSource(*node, *timeout, liveOptions())
	if err != nil {
		fmt.Fprintf(stderr, "keel snapshot: %v\n", err)
		return exitError
	}
	var opt probes.Options
	if len(configs) > 0 {
		cfg, err := desiredCache().Load(schema.NewLoader().LoadConfig, schema.Paths(configs)...)
		if err != nil {
			fmt.Fprintf(stderr, "keel snapshot: %s\n", loadErrorText("snapshot", configs, err))
			return exitError
		}
		opt.PVEStorageCfg = cfg.Proxmox.StorageConfig
	}
	rec := hostio.NewRecorder(src)
	start := time.Now()
	h, perr := probes.ProbeWith(context.Background(), rec.Source(), opt)
	if *withActivation {
		if _, err := probes.ReadActivationReport(context.Background(), rec.Source(), nil); err != nil {
			fmt.Fprintf(stderr, "keel snapshot: warning: activation report: %v\n", err)
		}
	}
	if *verbose {
		printTimings(stderr, time.Since(start), rec.Timings())
	}
	if perr != nil {
		if *verify {
			// Nothing to verify: a replay that fails the same way would
			// "equal" a pass that failed.
			fmt.Fprintf(stderr, "keel snapshot: verify: the live pass failed: %s\n", probeErrorText(perr))
			return exitError
		}
		fmt.Fprintf(stderr, "keel snapshot: warning: %s\n", probeErrorText(perr))
	}
	snap := rec.Snapshot(h.Hostname, Version, time.Now())
	if h.PVEStorageCfg != probes.DefaultPVEStorageCfg {
		// Its replay reads the same storage.cfg, whatever desired state
		// it is judged against.
		snap.PVEStorageCfg = h.PVEStorageCfg
	}
	data, err := snap.MarshalText()
	if err != nil {
		fmt.Fprintf(stderr, "keel snapshot: %v\n", err)
		return exitError
	}
	if *verify {
		if code := verifySnapshot(data, h, stderr); code != exitOK {
			return code
		}
	}
	if *out == "" {
		if _, err := stdout.Write(data); err != nil {
			fmt.Fprintf(stderr, "keel snapshot: %v\n", err)
			return exitError
		}
		return exitOK
	}
	if err := os.WriteFile(*out, data, 0o644); err != nil {
		fmt.Fprintf(stderr, "keel snapshot: %v\n", err)
		return exitError
	}
	fmt.Fprintf(stderr, "keel snapshot: wrote %s (%d commands, %d files)\n", *out, len(snap.Commands), len(snap.Files))
	return exitOK
}

// printTimings writes the pass time and the ten slowest operations.
func printTimings(w io.Writer, total time.Duration, t map[string]time.Duration) {
	keys := make([]string, 0, len(t))
	var sum time.Duration
	for k, d := range t {
		keys = append(keys, k)
		sum += d
	}
	sort.Slice(keys, func(i, j int) bool { return t[keys[i]] > t[keys[j]] })
	fmt.Fprintf(w, "keel snapshot: probe pass %v wall, %d operations, %v summed\n", total.Round(time.Millisecond), len(t), sum.Round(time.Millisecond))
	for _, k := range keys[:min(10, len(keys))] {
		fmt.Fprintf(w, "  %8v  %s\n", t[k].Round(time.Millisecond), k)
	}
}

// verifySnapshot parses the written snapshot back, probes its replay and
// compares the model with the recorded pass's. A replay that fails is a
// failed verification, whatever its model.
func verifySnapshot(data []byte, live *model.Host, stderr io.Writer) int {
	snap, err := hostio.ParseSnapshot(data)
	if err != nil {
		fmt.Fprintf(stderr, "keel snapshot: verify: %v\n", err)
		return exitError
	}
	replayed, err := probes.Probe(context.Background(), hostio.Replay(snap))
	if err != nil {
		fmt.Fprintf(stderr, "keel snapshot: verify: the replay failed: %v\n", err)
		return exitError
	}
	diff, err := model.Diff(live, replayed, 20)
	if err != nil {
		fmt.Fprintf(stderr, "keel snapshot: verify: %v\n", err)
		return exitError
	}
	if diff != nil {
		fmt.Fprintf(stderr, "keel snapshot: verify: the replay differs from the live pass:\n  %s\n", strings.Join(diff, "\n  "))
		return exitError
	}
	fmt.Fprintln(stderr, "keel snapshot: verify: the replay gives the same model as the live pass")
	return exitOK
}
