package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/keel-storage/keel/lvm/units"
	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/reconcile/apply/wipe"
	"github.com/keel-storage/keel/reconcile/converge"
	"github.com/keel-storage/keel/reconcile/plan/removal"
	"github.com/keel-storage/keel/schema"
	"github.com/keel-storage/keel/schema/spec"
	"golang.org/x/sys/unix"
)

// runWipe implements `keel wipe [-c PATH] [--node SNAPSHOT] [--mode M]
// [--step SIZE] [--dry-run] [--absent] [VG/LV ...]`. Interrupted wipes
// (del-* LVs keel left) are finished first. Exit 0: done (or planned);
// 1: refused for safety, nothing changed; 2: keel could not do the job
// (bad flags, not root, missing, invalid or unsafe desired state, probe,
// command or I/O failure, interrupted).
func runWipe(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("wipe", "[VG/LV ...]",
		"Renames each LV to del-<name>, zeroes (BLKZEROOUT) or discards (BLKDISCARD) it in steps with",
		"progress, then lvremoves it. del-* LVs left by an interrupted wipe are finished first.",
		"The VG must be declared in the desired state. Without --dry-run or --node keel must run as root.",
		"In audit mode (agent.mode \"audit\") it refuses all but --dry-run and --node.",
		"Exit status: 0 done, 1 refused (nothing changed), 2 could not run (bad flags, not root,",
		"missing or invalid desired state) or failed.")
	var configs multiFlag
	desiredFlag(fs, &configs)
	node := fs.String("node", "", "plan against the node `SNAPSHOT` instead of this host (implies --dry-run)")
	modeFlag := fs.String("mode", "", "clear the LV with `zeroout|discard` (default: removal.mode of the desired state)")
	stepFlag := fs.String("step", "", "step `SIZE` of one ioctl (default: removal.step); zeroout caps it at write_zeroes_max_bytes")
	dryRun := fs.Bool("dry-run", false, "print what would be done and change nothing")
	absent := fs.Bool("absent", false, "the daemon's rule: names must be in their VG's absent list; with no names, remove every absent LV")
	timeout := fs.Duration("timeout", 60*time.Second, "per-command timeout of probe and lvm commands")
	if code, ok := parseArgs(fs, args, stdout, stderr); !ok {
		return code
	}
	if *modeFlag != "" && *modeFlag != string(removal.ModeZeroOut) && *modeFlag != string(removal.ModeDiscard) {
		return usageError(fs, stderr, "invalid value %q for flag -mode: want %s or %s", *modeFlag, removal.ModeZeroOut, removal.ModeDiscard)
	}
	if !*dryRun && *node == "" && !requireRoot("wipe", args, "add --dry-run to see what it would do", stderr) {
		return exitError
	}
	names := fs.Args()
	// Whoever can write the desired state can make keel destroy data: keel
	// wipe checks its ownership like keel apply (a missing file is the
	// loader's error below).
	if err := converge.CheckOwnership(schema.Paths(configs)); err != nil && !errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(stderr, "keel wipe: %v\nkeel wipe: nothing was changed\n", err)
		return exitError
	}
	src, err := hostio.NodeSource(*node, *timeout, liveOptions())
	if err != nil {
		fmt.Fprintf(stderr, "keel wipe: %v\n", err)
		return exitError
	}
	log := hclog.New(&hclog.LoggerOptions{Name: "keel", Output: stderr, Level: hclog.Info})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The ownership was checked above, with keel wipe's own exit status.
	loop := converge.New(configs, converge.Wiring{Source: src, Log: log, SkipOwnerCheck: true, StateDir: stateDir(),
		Wipes: wipeProgress(ctx, stderr, log)})
	err = loop.Load(loop.Read())
	if err != nil {
		fmt.Fprintf(stderr, "keel wipe: %s\n", loadErrorText("wipe", configs, err))
		return exitError
	}
	cfg := loop.Desired()
	if cfg.Agent.Mode == spec.AgentAudit && !*dryRun && *node == "" {
		fmt.Fprintln(stderr, `keel wipe: agent.mode is "audit" in the desired state: nothing removed; keel wipe --dry-run shows what it would remove, agent.mode "converge" lets it`)
		return exitFindings
	}
	mode := removal.Mode(cfg.Removal.Mode)
	if *modeFlag != "" {
		mode = removal.Mode(*modeFlag)
	}
	stepStr := cfg.Removal.Step
	if *stepFlag != "" {
		stepStr = *stepFlag
	}
	var step uint64
	if stepStr != "" {
		if step, err = units.ParseSize(stepStr); err != nil {
			fmt.Fprintf(stderr, "keel wipe: step %q: %v\n", stepStr, err)
			return exitError
		}
	}
	targets, err := loop.PlanWipe(ctx, converge.WipeRequest{Names: names, Mode: mode, Absent: *absent,
		Replay: *node != ""})
	if err != nil {
		return refused(stderr, err)
	}
	if len(targets) == 0 {
		fmt.Fprintln(stdout, "keel wipe: nothing to remove")
		return exitOK
	}
	for _, t := range targets {
		fmt.Fprintln(stdout, describe(t))
	}
	if *dryRun || *node != "" {
		return exitOK
	}

	if err := loop.RunWipe(ctx, targets, step); err != nil {
		return refused(stderr, err)
	}
	return exitOK
}

func refused(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "keel wipe: %s\n", probeErrorText(err))
	if errors.Is(err, removal.ErrRefused) {
		fmt.Fprintln(stderr, "keel wipe: nothing was changed")
		return exitFindings
	}
	return exitError
}

func describe(t removal.Target) string {
	s := "remove " + t.Name()
	if t.Resume {
		s = "resume " + t.DelName()
	}
	s += fmt.Sprintf(" (%s, %s", units.FormatSize(t.Size), t.Mode)
	if t.DiscardAfter {
		s += " then discard"
	}
	s += ")"
	for _, n := range t.Notes {
		s += "\n  note: " + n
	}
	return s
}

// wipeProgress makes the remover draw a bar on a terminal, or log
// structured progress lines every 10 s otherwise, for each wipe pass.
func wipeProgress(ctx context.Context, stderr io.Writer, log hclog.Logger) converge.WipeObserver {
	term := isTerminal(stderr)
	interval := 10 * time.Second
	if term {
		interval = 500 * time.Millisecond
	}
	var mu sync.Mutex
	stops := map[*wipe.Progress]func(){}
	var o converge.WipeObserver
	o.Started = func(t removal.Target, pass removal.Mode, p *wipe.Progress) {
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			wipe.Report(rctx, p, t.Name()+" "+string(pass), interval, term, stderr, log)
		}()
		mu.Lock()
		stops[p] = func() { cancel(); <-done }
		mu.Unlock()
	}
	o.Finished = func(_ removal.Target, _ removal.Mode, p *wipe.Progress, _ error) {
		mu.Lock()
		stop := stops[p]
		delete(stops, p)
		mu.Unlock()
		if stop != nil {
			stop()
		}
	}
	return o
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
