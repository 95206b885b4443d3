package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/keel-storage/keel/cmd/keel/internal/daemon"
	"github.com/keel-storage/keel/internal/logging"
	"github.com/keel-storage/keel/probes"
	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/reconcile/apply/lvmconf"
	"github.com/keel-storage/keel/reconcile/converge"
)

// runDaemon implements keel run. It returns only on SIGTERM or SIGINT
// (exit 0) or when it cannot start (exit 2).
func runDaemon(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("run", "",
		"Keeps the host converged: passes on desired-state and lvm.conf changes, on block device",
		"uevents (device-mapper devices created, removed or resumed; bcache registrations), when the",
		"LVM metadata headers of a PV change (read every --poll: an LVM commit on an inactive LV),",
		"on SIGHUP (reload) and every --resync, the safety net. Logs to the journal when stderr is",
		"the journal, else to stderr. See docs/daemon.md, \"The change signal\".",
		"Exit status: 0 after SIGTERM or SIGINT, 2 could not start (bad flags, not root).")
	var configs multiFlag
	desiredFlag(fs, &configs)
	resync := fs.Duration("resync", time.Hour, "pass at least this often, changes seen or not")
	poll := fs.Duration("poll", 30*time.Second, "read the LVM metadata headers of every PV this often; 0 turns the poll off")
	textfile := fs.String("textfile", "", "write Prometheus metrics to `FILE` (overrides alerts.textfile)")
	lvmConf := fs.String("lvm-conf", lvmconf.DefaultPath, "the lvm.conf `FILE` to keep and watch")
	level := fs.String("log-level", "info", "log `LEVEL`: trace, debug, info, warn, error")
	logJSON := fs.Bool("log-json", false, "JSON log lines on stderr (when not logging to the journal)")
	noUevents := fs.Bool("no-uevents", false, "do not listen to kernel uevents")
	timeout := fs.Duration("timeout", 5*time.Minute, "per-command timeout; pvmove, lvconvert, lvextend, lvresize and activations have none (docs/operations.md)")
	audit := fs.Bool("audit", false, "observe, report and alert; never change the host (as agent.mode \"audit\")")
	cpuProfile := fs.String("cpu-profile", "", "write a Go CPU profile of the whole run to `FILE` when keel stops (diagnosis)")
	cmdLog := fs.String("command-log", "", "append every command keel runs, one argv per line (JSON), to `FILE` (tests)")
	if code, ok := parseArgs(fs, args, stdout, stderr); !ok {
		return code
	}
	lvl := hclog.LevelFromString(*level)
	if code := noArgs(fs, stderr); code != exitOK {
		return code
	}
	if lvl == hclog.NoLevel {
		return usageError(fs, stderr, "invalid value %q for flag -log-level: want trace, debug, info, warn or error", *level)
	}
	if !requireRoot("run", args, "run 'keel check' to see what differs without changing anything", stderr) {
		return exitError
	}
	log, sink := logging.New(logging.Options{Name: "keel", Level: lvl, Stderr: stderr, JSON: *logJSON})
	if sink != nil {
		defer sink.Close()
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			log.Error("cpu profile", "path", *cpuProfile, "err", err)
			return exitError
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	src := hostio.Live("/", *timeout, liveOptions())
	if *cmdLog != "" {
		cl, err := newCommandLog(*cmdLog, src.Runner)
		if err != nil {
			log.Error("command log", "path", *cmdLog, "err", err)
			return exitError
		}
		defer cl.Close()
		src.Runner = cl
	}
	// Every command of the loop goes through live, which tells the
	// watchdog a long pass from a hung one.
	live := &daemon.Liveness{Inner: src.Runner, Timeout: *timeout}
	src.Runner = live
	// Above the command log and the watchdog's count: an lvmconfig answered
	// from the cache ran nothing.
	src = withLVMConfigCache(src, "")
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	d := &daemon.Daemon{Log: log, LVMConfPath: *lvmConf, Resync: *resync, Textfile: *textfile,
		NoUevents: *noUevents, Reload: hup, Audit: *audit, Liveness: live, Poll: *poll}
	// Each desired state that loads is kept for keel activate at the next
	// boot (converge.LastGoodFile).
	d.Loop = converge.New(configs, converge.Wiring{Source: src, LVMConfPath: *lvmConf, Log: log, Wipes: d.WipeObserver(), KeepLastGood: true, Cache: stateCache(), StateDir: stateDir()})
	if *poll > 0 {
		d.Stamp = func(dev string) (string, error) { return probes.MetadataStamp(src.FS, dev) }
		d.Seqnos = func(ctx context.Context) (map[string]uint64, error) { return probes.VGSeqnos(ctx, src) }
		d.PoolKey = func(ctx context.Context) (string, error) { return probes.PoolStatusKey(ctx, src) }
	}
	if err := d.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		log.Error("keel run stopped", "err", err)
		return exitError
	}
	log.Info("keel run stopped")
	return exitOK
}
