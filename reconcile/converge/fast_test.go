package converge

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/keel-storage/keel/probes"
	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/reconcile/activation"
	"github.com/keel-storage/keel/reconcile/apply/executor"
	"github.com/keel-storage/keel/reconcile/converge/convergetest"
	"github.com/keel-storage/keel/reconcile/plan"
	"github.com/keel-storage/keel/schema"
	"github.com/keel-storage/keel/schema/spec"
)

func TestBcacheOnly(t *testing.T) {
	i := func(v int64) *int64 { return &v }
	yes := true
	base := func() *spec.Config {
		return &spec.Config{
			LVM:          &spec.LVM{ScanLVs: &yes},
			VolumeGroups: map[string]spec.VolumeGroup{"vg": {PVs: []string{"/dev/sdb"}}},
			Bcache:       map[string]spec.Bcache{"b0": {Backing: "u1", WritebackPercent: i(40)}},
		}
	}
	wb30 := base()
	wb30.Bcache = map[string]spec.Bcache{"b0": {Backing: "u1", WritebackPercent: i(30)}}
	added := base()
	added.Bcache["b1"] = spec.Bcache{Backing: "u2"}
	both := base()
	both.Bcache = wb30.Bcache
	both.VolumeGroups = map[string]spec.VolumeGroup{"vg": {PVs: []string{"/dev/sdc"}}}
	alerts := base()
	alerts.Bcache = wb30.Bcache
	alerts.Alerts.Textfile = "/x.prom"
	for _, c := range []struct {
		name       string
		prev, next *spec.Config
		want       bool
	}{
		{"tunable changed", base(), wb30, true},
		{"device added", base(), added, true},
		{"unchanged", base(), base(), false},
		{"bcache and a VG changed", base(), both, false},
		{"bcache and alerts changed", base(), alerts, false},
		{"first load", nil, base(), false},
	} {
		if got := BcacheOnly(c.prev, c.next); got != c.want {
			t.Errorf("%s: BcacheOnly = %v, want %v", c.name, got, c.want)
		}
	}
}

// mixedHost wires a loop to the mixed snapshot (recorded in the guest;
// its bcache0 has writeback_percent 10) with a sysfs that keeps writes.
func mixedHost(t *testing.T, dir string) (*Loop, *convergetest.MemSysFS, *convergetest.CountingRunner) {
	t.Helper()
	src, sys, run := convergetest.Replayed(t, "../../probes/testdata/snapshots/mixed.txtar")
	l := New([]string{dir}, Wiring{StateDir: t.TempDir(), Source: src, SysFS: sys,
		DpkgDir: t.TempDir(), LVMConfPath: filepath.Join(t.TempDir(), "lvm.conf"), Options: executor.Options{MaxAttempts: 1}})
	return l, sys, run
}

func bcacheCue(wb int) string {
	return "bcache: b0: {\n\tbacking: \"a67c2e52-040c-493e-99e7-8498486cebf1\"\n\twritebackPercent: " + itoa(wb) + "\n}\n"
}

func itoa(v int) string { return strconv.Itoa(v) }

// The fast path verifies its writes from sysfs too: no command runs.
func TestBcachePassRunsNoCommand(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "b.cue"), []byte(bcacheCue(40)), 0o644)
	a, sys, run := mixedHost(t, dir)
	if err := a.Load(a.Read()); err != nil {
		t.Fatal(err)
	}
	rep, err := a.BcachePass(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 1 || rep.Results[0].Status != executor.Converged {
		t.Fatalf("%+v", rep.Results)
	}
	if len(sys.Writes) != 1 || sys.Writes[0] != "/sys/block/bcache0/bcache/writeback_percent=40" {
		t.Fatalf("writes %q", sys.Writes)
	}
	if n := run.N.Load(); n != 0 {
		t.Fatalf("the fast path ran %d commands", n)
	}
}

// A pass whose verifying re-probe plans nothing to apply ends Converge:
// no further probe, even though findings at warning level are left.
func TestConvergeStopsWhenNothingPending(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "b.cue"), []byte(bcacheCue(40)+"volumeGroups: missingvg: pvs: [\"/dev/disk/by-id/nvme-none\"]\n"), 0o644)
	a, sys, run := mixedHost(t, dir)
	a.skipOwnerCheck = true
	if err := a.Load(a.Read()); err != nil {
		t.Fatal(err)
	}
	res, err := a.Converge(context.Background(), Options{Mode: executor.Mode{}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Report.Count(executor.Converged) != 1 || len(sys.Writes) != 1 {
		t.Fatalf("results %+v writes %q", res.Report.Results, sys.Writes)
	}
	warn := 0
	for _, f := range res.Findings {
		if f.Severity >= 1 {
			warn++
		}
	}
	if warn == 0 || res.Pending != 0 {
		t.Fatalf("want findings left and nothing pending; pending %d findings %+v", res.Pending, res.Findings)
	}
	run.N.Store(0)
	if _, err := a.Probe(context.Background()); err != nil {
		t.Fatal(err)
	}
	perProbe := run.N.Load()
	run.N.Store(0)
	os.WriteFile(filepath.Join(dir, "b.cue"), []byte(bcacheCue(30)+"volumeGroups: missingvg: pvs: [\"/dev/disk/by-id/nvme-none\"]\n"), 0o644)
	if err := a.Load(a.Read()); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Converge(context.Background(), Options{Mode: executor.Mode{}}); err != nil {
		t.Fatal(err)
	}
	// One probe to plan, one to verify the write: two, not three.
	if got := run.N.Load(); got != 2*perProbe {
		t.Fatalf("%d commands, want %d (two probes of %d)", got, 2*perProbe, perProbe)
	}
}

// Converge plans its first pass against the host it is given.
func TestConvergeGivenHost(t *testing.T) {
	snap, err := hostio.ReadSnapshotFile("../../probes/testdata/snapshots/mixed.txtar")
	if err != nil {
		t.Fatal(err)
	}
	h, err := probes.Probe(context.Background(), hostio.Replay(snap))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "b.cue"), []byte(bcacheCue(40)), 0o644)
	a := New([]string{dir}, Wiring{StateDir: t.TempDir(), Source: hostio.Source{Runner: failingRunner{}, FS: hostio.DirFS(t.TempDir())}})
	a.skipOwnerCheck = true
	if err := a.Load(a.Read()); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Converge(context.Background(), Options{Mode: executor.Mode{DryRun: true}}); err == nil {
		t.Fatal("a pass on a host that cannot be probed succeeded")
	}
	res, err := a.Converge(context.Background(), Options{Host: h, Mode: executor.Mode{DryRun: true}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Report.Results) != 1 || res.Report.Results[0].Status != executor.Planned ||
		len(res.Report.Results[0].Action.Writes) != 1 || !strings.HasSuffix(res.Report.Results[0].Action.Writes[0].Path, "/writeback_percent") {
		t.Fatalf("%+v", res.Report.Results)
	}
}

func TestMaybeBcacheOnly(t *testing.T) {
	a := New([]string{"/etc/keel"}, Wiring{StateDir: t.TempDir(), Source: hostio.Source{Runner: failingRunner{}}})
	a.skipOwnerCheck = true
	files := func(texts ...string) []schema.File {
		var fs []schema.File
		for i, s := range texts {
			fs = append(fs, schema.File{Name: "/etc/keel/" + strconv.Itoa(i) + ".cue", Data: []byte(s)})
		}
		return fs
	}
	lvm := "lvm: scanLVs: true\n"
	if err := a.Load(files(bcacheCue(40), lvm), nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		next []schema.File
		want bool
	}{
		{"tunable changed", files(bcacheCue(30), lvm), true},
		{"nothing changed", files(bcacheCue(40), lvm), false},
		{"tunable changed, comment added elsewhere", files(bcacheCue(30), "// why\nlvm: scanLVs: true\n"), true},
		{"lvm changed too", files(bcacheCue(30), "lvm: scanLVs: false\n"), false},
		{"a file added", files(bcacheCue(30), lvm, "alerts: textfile: \"/x\"\n"), false},
		{"does not parse", files(bcacheCue(30)+"}", lvm), false},
	} {
		if got := a.MaybeBcacheOnly(c.next); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// ruleFS serves keel's udev rules files from dir, where a Loop with
// FileRoot dir writes them, and everything else from the replayed host.
type ruleFS struct {
	hostio.FS
	dir string
}

func (f ruleFS) ReadFile(name string) ([]byte, error) {
	if slices.Contains(model.UdevRulePaths, name) {
		return os.ReadFile(filepath.Join(f.dir, name))
	}
	return f.FS.ReadFile(name)
}

// udevRunner answers udevadm as systemd-udevd would, with one uevent of
// bcache0 queued that runs the old rule (writeback_percent 10): it lands
// when udevadm settle waits for it, or, if nothing waits, after the fast
// path (land). Other commands go to Runner.
type udevRunner struct {
	hostio.Runner
	sys *convergetest.MemSysFS
	// onSettle, when set, runs as udevadm settle starts.
	onSettle func()
	mu       sync.Mutex
	cmds     []string
	// writesAtReload is how many sysfs writes were made when udevadm
	// control --reload ran.
	writesAtReload int
	landed         bool
}

func (u *udevRunner) Run(ctx context.Context, c hostio.Cmd) (hostio.Result, error) {
	if c.Name != "udevadm" {
		return u.Runner.Run(ctx, c)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.cmds = append(u.cmds, c.String())
	switch c.Args[0] {
	case "control":
		u.sys.Mu.Lock()
		u.writesAtReload = len(u.sys.Writes)
		u.sys.Mu.Unlock()
	case "settle":
		if u.onSettle != nil {
			u.onSettle()
		}
		u.landLocked()
	}
	return hostio.Result{}, nil
}

// land runs the queued old-rule event if it has not run yet.
func (u *udevRunner) land() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.landLocked()
}

func (u *udevRunner) landLocked() {
	if !u.landed {
		u.landed = true
		u.sys.Mu.Lock()
		u.sys.Files[wbpPath] = "10" // what udevd's worker writes, not keel
		u.sys.Mu.Unlock()
	}
}

const wbpPath = "/sys/block/bcache0/bcache/writeback_percent"

// ruleLoop wires a loop to the mixed snapshot, with keel's rules files
// under a directory of its own and udevadm answered by a udevRunner.
func ruleLoop(t *testing.T, wb int) (*Loop, *convergetest.MemSysFS, *convergetest.CountingRunner, *udevRunner, string) {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "b.cue"), []byte(bcacheCue(wb)), 0o644)
	src, sys, run := convergetest.Replayed(t, "../../probes/testdata/snapshots/mixed.txtar")
	root := t.TempDir()
	src.FS = ruleFS{FS: src.FS, dir: root}
	u := &udevRunner{Runner: src.Runner, sys: sys}
	a := New([]string{dir}, Wiring{StateDir: t.TempDir(), Source: src, SysFS: sys, FileRoot: root, Runner: u,
		DpkgDir: t.TempDir(), LVMConfPath: filepath.Join(t.TempDir(), "lvm.conf"), Options: executor.Options{MaxAttempts: 1}})
	if err := a.Load(a.Read()); err != nil {
		t.Fatal(err)
	}
	return a, sys, run, u, root
}

// The fast path writes keel's bcache udev rule before the tunables, and
// has udevd reload its rules only after them: a "change" uevent of bcache0
// between its writes and the full pass would otherwise apply the old
// rule's values until a later event ran the new rule, and a busy udevd
// would hold the tunables up to the reload's 5 s.
func TestBcachePassWritesTheRuleFirst(t *testing.T) {
	a, _, run, u, root := ruleLoop(t, 40)
	rep, err := a.BcachePass(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) < 2 || rep.Results[0].Action.ID != "bcache.udev_rule:"+activation.BcacheRule ||
		!strings.HasPrefix(rep.Results[1].Action.ID, "bcache.tunable:") {
		t.Fatalf("want the rule, then the tunable: %+v", rep.Results)
	}
	for _, r := range rep.Results {
		if r.Status != executor.Converged {
			t.Errorf("%s: %s", r.Action.ID, r.Status)
		}
	}
	b, err := os.ReadFile(filepath.Join(root, activation.BcacheRule))
	if err != nil || !strings.Contains(string(b), `ATTR{bcache/writeback_percent}="40"`) {
		t.Fatalf("rule %q, %v", b, err)
	}
	want := []string{strings.Join(plan.UdevReload, " "), strings.Join(plan.UdevSettle, " ")}
	if !slices.Equal(u.cmds, want) || u.writesAtReload != 1 {
		t.Errorf("commands %q with %d sysfs writes before the reload, want %q after the tunable's write", u.cmds, u.writesAtReload, want)
	}
	if n := run.N.Load(); n != 0 {
		t.Errorf("the fast path ran %d probe commands", n)
	}
}

// A uevent of bcache0 that udevd starts before it has read keel's new rule
// runs the old one (it looks at its rules at most every 3 s), and sets the
// tunable back after the fast path wrote it. The fast path waits for such
// events once udevd has reloaded its rules, and writes the tunable again.
// Otherwise the old value stays until a later event runs the new rule.
func TestBcachePassRewritesWhatTheOldRuleSetBack(t *testing.T) {
	a, sys, _, u, _ := ruleLoop(t, 40)
	rep, err := a.BcachePass(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	u.land() // had nothing waited for it, it lands now
	sys.Mu.Lock()
	got, writes := sys.Files[wbpPath], slices.Clone(sys.Writes)
	sys.Mu.Unlock()
	if got != "40" {
		t.Fatalf("writeback_percent %q after the fast path and the old rule's event, want 40 (writes %q)", got, writes)
	}
	if len(writes) != 2 || rep.Count(executor.Converged) != 3 {
		t.Errorf("writes %q, results %+v: want the tunable written twice, three actions converged", writes, rep.Results)
	}
	// When nothing set it back, it is written once.
	a, sys, _, u, _ = ruleLoop(t, 40)
	u.landed = true
	if _, err := a.BcachePass(context.Background(), Options{}); err != nil {
		t.Fatal(err)
	}
	if len(sys.Writes) != 1 {
		t.Errorf("writes %q without an old-rule event, want one", sys.Writes)
	}
}

// The fast path's wait for udev is not part of its apply: a newer trigger
// preempts it there, as it would a probe, and the fast path ends with
// ErrPreempted (the daemon serves the change again) without writing more.
func TestBcachePassPreemptedWhileUdevSettles(t *testing.T) {
	a, sys, _, u, _ := ruleLoop(t, 40)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := NewGate(cancel)
	preempted := false
	u.onSettle = func() { preempted = g.Preempt() }
	rep, err := a.BcachePass(ctx, Options{Gate: g})
	if !preempted || !errors.Is(err, ErrPreempted) {
		t.Fatalf("preempted %v, err %v: want the settle preempted and ErrPreempted", preempted, err)
	}
	if rep.Count(executor.Converged) != 2 || len(sys.Writes) != 1 {
		t.Errorf("results %+v, writes %q: want the rule and the tunable, and no write after the preemption", rep.Results, sys.Writes)
	}
}
