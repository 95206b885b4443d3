// Command keel-boot is the first program keel-activate.service runs at
// boot: the fast path of keel activate, in a binary a fifth of keel's size
// that links neither CUE nor the metrics server, so that less is read from
// disk and started beside lvm2's own activation of the declared VGs, which
// the guests wait on (docs/boot.md).
//
// It takes keel activate's flags. When the host is in the common case — the
// desired state's files are those keel itself validated last (its
// desired-state cache in keel's state directory, keyed by keel's build ID),
// keel.service will make the probe pass (--leave-pass-to-daemon), and
// lvm2's own autoactivation brings every declared VG up — it waits for
// that activation, confirms it from LVM's report and device-mapper
// (reconcile/bootwatch, the same code as keel activate's), tells systemd
// READY and ends. In every other case it hands the unit over to keel
// activate: it execs /usr/bin/keel activate with the same flags, the
// process (and so systemd's main PID) unchanged and --timeout cut by the
// time already spent, so that the guests are held no longer than the bound.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/keel-storage/keel/internal/bootunit"
	"github.com/keel-storage/keel/internal/desiredcache"
	"github.com/keel-storage/keel/internal/logging"
	"github.com/keel-storage/keel/internal/notify"
	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/reconcile/bootwatch"
	"github.com/keel-storage/keel/schema/desiredfiles"
	"github.com/keel-storage/keel/schema/spec"
)

// Where keel and its state live on a host. keel's own names for them:
// cmd/keel (stateCache) and converge.DefaultStateDir; a test holds the two
// equal.
const (
	keelPath        = "/usr/bin/keel"
	defaultStateDir = "/var/lib/keel"
)

func main() {
	start := time.Now()
	h := host{
		root: "/", keel: keelPath, stateDir: os.Getenv("KEEL_STATE_DIR"), cacheDir: os.Getenv("KEEL_CACHE_DIR"),
		notRoot: os.Geteuid() != 0, euid: os.Geteuid(), stdout: os.Stdout, stderr: os.Stderr,
		exec: func(argv []string) error { return syscall.Exec(argv[0], argv, os.Environ()) },
		live: hostio.LiveOptions{NoDMIoctl: os.Getenv("KEEL_DM_IOCTL") == "off"},
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := h.run(ctx, start, os.Args[1:])
	stop()
	os.Exit(code)
}

// host is what keel-boot reads and runs on: the file root, keel's binary,
// the state and cache directories ("" for keel's defaults, as
// KEEL_STATE_DIR and KEEL_CACHE_DIR say), whether it runs as root and as
// which user (whose desired-state files it may take), and how it execs
// keel.
type host struct {
	root     string
	keel     string
	stateDir string
	cacheDir string
	notRoot  bool
	euid     int
	stdout   io.Writer
	stderr   io.Writer
	// exec replaces the process with argv (syscall.Exec); it returns only
	// on failure.
	exec func(argv []string) error
	// live tunes the live Source; src, when set, replaces it (tests).
	live   hostio.LiveOptions
	src    *hostio.Source
	notify notify.Sender
}

// options are the keel activate flags keel-boot reads; it passes all of
// them on unchanged when it hands over.
type options struct {
	configs   []string
	node      string
	timeout   time.Duration
	level     string
	leavePass bool
	audit     bool
	waitNice  int
}

// parse reads keel activate's flags from args, or says why keel-boot
// leaves them to keel (a flag it does not know, --help, an argument).
func parse(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("keel-boot", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Func("c", "", func(s string) error { o.configs = append(o.configs, s); return nil })
	fs.StringVar(&o.node, "node", "", "")
	fs.DurationVar(&o.timeout, "timeout", 2*time.Minute, "")
	fs.Duration("poll", time.Second, "")
	fs.String("lvm-conf", "", "")
	fs.Bool("no-udev-rules", false, "")
	fs.BoolVar(&o.leavePass, "leave-pass-to-daemon", false, "")
	fs.BoolVar(&o.audit, "audit", false, "")
	fs.IntVar(&o.waitNice, "wait-nice", 0, "")
	fs.StringVar(&o.level, "log-level", "info", "")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("argument %q", fs.Arg(0))
	case o.node != "":
		return o, errors.New("--node (a recorded host)")
	case o.timeout <= 0:
		return o, errors.New("--timeout not above zero")
	case o.waitNice < 0 || o.waitNice > 19:
		return o, errors.New("--wait-nice not from 0 to 19")
	case hclog.LevelFromString(o.level) == hclog.NoLevel:
		return o, fmt.Errorf("--log-level %q", o.level)
	}
	return o, nil
}

// run is keel-boot: the fast path, or the hand-over to keel activate. It
// returns the exit status.
func (h host) run(ctx context.Context, start time.Time, args []string) int {
	o, err := parse(args)
	if err != nil {
		return h.handOver(args, start, o.timeout, "keel activate reads these flags: "+err.Error())
	}
	log, sink := logging.New(logging.Options{Name: "keel-activate", Level: hclog.LevelFromString(o.level), Stderr: h.stderr})
	if sink != nil {
		defer sink.Close()
	}
	// At nice --wait-nice until lvm2's activation has ended; keel activate,
	// if handed over to, finds the process at that nice already.
	niced := bootunit.WaitNice(log, o.waitNice)
	cfg, why := h.cached(o)
	if cfg == nil {
		log.Info("handing over to keel activate", "why", why)
		return h.handOver(args, start, o.timeout, why)
	}
	log.Info("desired state loaded", "since_main", since(start), "from", "keel's desired-state cache")
	if o.audit || cfg.Agent.Mode == spec.AgentAudit {
		log.Info("audit mode: lvm.conf, bcache tunables and udev rules left as they are; only lvm2's vgchange -aay runs")
	}
	src := hostio.Live(h.root, time.Minute, h.live)
	if h.src != nil {
		src = *h.src
	}
	wake, stopWake := bootwatch.LiveWaker(src, log)
	defer stopWake()
	w := bootwatch.Watch{Source: src, Desired: cfg, Log: log, Wake: wake}
	_ = h.notify.Status("activating the declared storage stack")
	deadline := start.Add(o.timeout)
	var early *bootwatch.EarlyReport
	w.WaitForLVM(ctx, deadline, func(vgs []string) {
		if vgs == nil {
			_ = h.notify.Status("reading the declared VGs")
			return
		}
		_ = h.notify.Status("waiting for lvm2's own activation of vg " + strings.Join(vgs, ", "))
	}, func() {
		early = bootwatch.StartEarlyReport(ctx, src, early)
	})
	if niced > 0 {
		bootunit.SetGroupNice(log, 0)
	}
	if ctx.Err() != nil {
		fmt.Fprintf(h.stderr, "keel-boot: stopped while waiting for lvm2's own activation\n")
		return 2
	}
	if !time.Now().Before(deadline) {
		return h.handOver(args, start, o.timeout, "lvm2's own activation still runs at the bound")
	}
	if early == nil {
		// lvm2 activated nothing declared while keel-boot watched: it
		// had done so before, or leaves a VG to keel (one on a VDO LV).
		// A report now tells which.
		early = bootwatch.StartEarlyReport(ctx, src, nil)
	}
	order, ok := w.Confirm(ctx, early)
	if !ok {
		return h.handOver(args, start, o.timeout, "not every declared VG is active after lvm2's own activation")
	}
	took := time.Since(start).Round(time.Millisecond)
	log.Info("stack active; READY before the probe pass", "vgs", len(order.Steps), "took", took.String())
	_ = h.notify.Ready(fmt.Sprintf("%d declared VGs active, in %s; checking the host", len(order.Steps), took))
	log.Info("probe pass, live settings and udev rules left to keel.service")
	active := bootwatch.Report(log, h.stdout, order)
	log.Info("stack active", "vgs", active, "absent", len(order.Steps)-active, "took", took.String())
	_ = h.notify.Ready(fmt.Sprintf("%d declared VGs active, %d absent, in %s", active, len(order.Steps)-active, took))
	return 0
}

// cached returns the desired state keel validated last for the files on
// disk, or nil and why keel-boot cannot take the fast path. It takes the
// files only as keel would (root, their owner and mode) and only when
// keel.service will make the probe pass after READY.
func (h host) cached(o options) (*spec.Config, string) {
	if h.notRoot {
		return nil, "not root"
	}
	if !o.leavePass {
		return nil, "without --leave-pass-to-daemon keel activate makes the probe pass"
	}
	if !bootunit.DaemonWillRun(h.root) {
		return nil, "keel.service is not enabled or is masked: keel activate makes the probe pass"
	}
	paths := desiredfiles.Paths(o.configs)
	if err := desiredfiles.CheckOwnership(paths, h.euid); err != nil {
		return nil, err.Error()
	}
	files, err := desiredfiles.Read(paths...)
	if err != nil {
		return nil, err.Error()
	}
	dir := h.cacheDir
	switch dir {
	case desiredcache.Off:
		return nil, "the desired-state cache is off"
	case "":
		state := h.stateDir
		if state == "" {
			state = defaultStateDir
		}
		dir = filepath.Join(state, desiredcache.StateSubdir)
	}
	id, err := desiredcache.BuildID(h.keel)
	if err != nil {
		return nil, err.Error()
	}
	cfg, ok := desiredcache.New(dir, id).Get(files)
	if !ok {
		return nil, "the desired state is not in keel's cache (changed since keel last loaded it, or keel was upgraded)"
	}
	return cfg, ""
}

// handOver execs keel activate with args, --timeout cut by the time spent
// since start; it returns only when the exec failed.
func (h host) handOver(args []string, start time.Time, timeout time.Duration, why string) int {
	argv := append([]string{h.keel, "activate"}, args...)
	if spent := time.Since(start); spent > time.Second && timeout > 0 {
		// A later --timeout wins (package flag); the flags end before any
		// argument only when parse took them all, and then there is none.
		left := max(timeout-spent, time.Second).Round(time.Second)
		argv = append(argv, "--timeout="+left.String())
	}
	err := h.exec(argv)
	fmt.Fprintf(h.stderr, "keel-boot: %s; exec %s: %v\n", why, h.keel, err)
	return 2
}

// since is the time since start, rounded to the millisecond for a log line.
func since(start time.Time) string { return time.Since(start).Round(time.Millisecond).String() }
