package agent

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/keel-storage/keel/cmd/keel/internal/testsock"
	"github.com/keel-storage/keel/probes"
	"github.com/keel-storage/keel/reconcile/executor"
	"github.com/keel-storage/keel/schema"
)

func TestBcacheOnly(t *testing.T) {
	i := func(v int64) *int64 { return &v }
	yes := true
	base := func() *schema.Config {
		return &schema.Config{
			LVM:          &schema.LVM{ScanLVs: &yes},
			VolumeGroups: map[string]schema.VolumeGroup{"vg": {PVs: []string{"/dev/sdb"}}},
			Bcache:       map[string]schema.Bcache{"b0": {Backing: "u1", WritebackPercent: i(40)}},
		}
	}
	wb30 := base()
	wb30.Bcache = map[string]schema.Bcache{"b0": {Backing: "u1", WritebackPercent: i(30)}}
	added := base()
	added.Bcache["b1"] = schema.Bcache{Backing: "u2"}
	both := base()
	both.Bcache = wb30.Bcache
	both.VolumeGroups = map[string]schema.VolumeGroup{"vg": {PVs: []string{"/dev/sdc"}}}
	alerts := base()
	alerts.Bcache = wb30.Bcache
	alerts.Alerts.Textfile = "/x.prom"
	for _, c := range []struct {
		name       string
		prev, next *schema.Config
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

// stickyFS is a replayed host whose sysfs takes the values written to it.
type stickyFS struct {
	probes.FS
	sys *memSysFS
}

func (f stickyFS) ReadFile(name string) ([]byte, error) {
	f.sys.mu.Lock()
	v, ok := f.sys.files["/"+strings.TrimPrefix(name, "/")]
	f.sys.mu.Unlock()
	if ok {
		return []byte(v + "\n"), nil
	}
	return f.FS.ReadFile(name)
}

// countingRunner counts the commands a replayed probe runs, each taking
// delay (cut short when ctx ends) as a live one takes time.
type countingRunner struct {
	probes.Runner
	n     atomic.Int64
	delay time.Duration
}

func (r *countingRunner) Run(ctx context.Context, c probes.Cmd) (probes.Result, error) {
	r.n.Add(1)
	if r.delay > 0 {
		select {
		case <-ctx.Done():
			return probes.Result{ExitCode: -1}, ctx.Err()
		case <-time.After(r.delay):
		}
	}
	return r.Runner.Run(ctx, c)
}

// mixedHost wires an agent to the mixed snapshot (recorded in the guest;
// its bcache0 has writeback_percent 10) with a sysfs that keeps writes.
func mixedHost(t *testing.T, dir string) (*Agent, *memSysFS, *countingRunner) {
	t.Helper()
	snap, err := probes.ReadSnapshotFile("../../../../probes/testdata/snapshots/mixed.txtar")
	if err != nil {
		t.Fatal(err)
	}
	src := probes.Replay(snap)
	sys := &memSysFS{files: map[string]string{}}
	run := &countingRunner{Runner: src.Runner}
	a := New([]string{dir}, Wiring{Source: probes.Source{Runner: run, FS: stickyFS{src.FS, sys}}, SysFS: sys,
		LVMConfPath: filepath.Join(t.TempDir(), "lvm.conf"), Options: executor.Options{MaxAttempts: 1}})
	return a, sys, run
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
	if err := a.Load(); err != nil {
		t.Fatal(err)
	}
	rep, err := a.BcachePass(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 1 || rep.Results[0].Status != executor.Converged {
		t.Fatalf("%+v", rep.Results)
	}
	if len(sys.writes) != 1 || sys.writes[0] != "/sys/block/bcache0/bcache/writeback_percent=40" {
		t.Fatalf("writes %q", sys.writes)
	}
	if n := run.n.Load(); n != 0 {
		t.Fatalf("the fast path ran %d commands", n)
	}
	// The next full verification is a full probe again.
	if a.bcacheVerify {
		t.Fatal("bcacheVerify left set")
	}
}

// A pass whose verifying re-probe plans nothing to apply ends Converge:
// no further probe, even though findings at warning level are left.
func TestConvergeStopsWhenNothingPending(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "b.cue"), []byte(bcacheCue(40)+"volumeGroups: missingvg: pvs: [\"/dev/disk/by-id/nvme-none\"]\n"), 0o644)
	a, sys, run := mixedHost(t, dir)
	a.SkipOwnerCheck = true
	if err := a.Load(); err != nil {
		t.Fatal(err)
	}
	res, err := a.Converge(context.Background(), false, false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Report.Count(executor.Converged) != 1 || len(sys.writes) != 1 {
		t.Fatalf("results %+v writes %q", res.Report.Results, sys.writes)
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
	run.n.Store(0)
	if _, err := a.Probe(context.Background()); err != nil {
		t.Fatal(err)
	}
	perProbe := run.n.Load()
	run.n.Store(0)
	os.WriteFile(filepath.Join(dir, "b.cue"), []byte(bcacheCue(30)+"volumeGroups: missingvg: pvs: [\"/dev/disk/by-id/nvme-none\"]\n"), 0o644)
	if err := a.Load(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Converge(context.Background(), false, false); err != nil {
		t.Fatal(err)
	}
	// One probe to plan, one to verify the write: two, not three.
	if got := run.n.Load(); got != 2*perProbe {
		t.Fatalf("%d commands, want %d (two probes of %d)", got, 2*perProbe, perProbe)
	}
}

// ConvergeFrom plans its first pass against the host it is given.
func TestConvergeFromGivenHost(t *testing.T) {
	snap, err := probes.ReadSnapshotFile("../../../../probes/testdata/snapshots/mixed.txtar")
	if err != nil {
		t.Fatal(err)
	}
	h, err := probes.Probe(context.Background(), probes.Replay(snap))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "b.cue"), []byte(bcacheCue(40)), 0o644)
	a := New([]string{dir}, Wiring{Source: probes.Source{Runner: failingRunner{}, FS: probes.DirFS(t.TempDir())}})
	a.SkipOwnerCheck = true
	if err := a.Load(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Converge(context.Background(), false, true); err == nil {
		t.Fatal("a pass on a host that cannot be probed succeeded")
	}
	res, err := a.ConvergeFrom(context.Background(), h, false, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Report.Results) != 1 || res.Report.Results[0].Status != executor.Planned ||
		len(res.Report.Results[0].Action.Writes) != 1 || !strings.HasSuffix(res.Report.Results[0].Action.Writes[0].Path, "/writeback_percent") {
		t.Fatalf("%+v", res.Report.Results)
	}
}

// The daemon serves a change of bcache tunables only by the fast path
// before its full pass, and any other change by a full pass alone.
func TestDaemonBcacheOnlyChange(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "b.cue")
	os.WriteFile(cfg, []byte(bcacheCue(40)), 0o644)
	a, sys, run := mixedHost(t, dir)
	run.delay = 100 * time.Millisecond
	a.SkipOwnerCheck = true
	sock, recv := testsock.Listen(t)
	t.Setenv("NOTIFY_SOCKET", sock)
	var logs strings.Builder
	d := &Daemon{Agent: a, Log: hclog.New(&hclog.LoggerOptions{Output: &syncWriter{b: &logs}, Level: hclog.Debug}),
		NoUevents: true, Debounce: 10 * time.Millisecond}
	a.Log = d.Log
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	if got := string(recv()); !strings.HasPrefix(got, "READY=1\nSTATUS=1 actions converged") {
		t.Fatalf("first notification %q", got)
	}
	os.WriteFile(cfg, []byte(bcacheCue(30)), 0o644)
	if got := string(recv()); !strings.HasPrefix(got, "STATUS=0 actions converged") {
		t.Fatalf("after the bcache change: %q", got) // the fast path converged it; the pass found nothing
	}
	os.WriteFile(cfg, []byte(bcacheCue(30)+"lvm: scanLVs: false\n"), 0o644)
	if got := string(recv()); !strings.HasPrefix(got, "STATUS=") {
		t.Fatalf("after the lvm change: %q", got)
	}
	cancel()
	recv() // STOPPING=1
	<-done
	sys.mu.Lock()
	writes := strings.Join(sys.writes, " ")
	sys.mu.Unlock()
	if writes != "/sys/block/bcache0/bcache/writeback_percent=40 /sys/block/bcache0/bcache/writeback_percent=30" {
		t.Fatalf("writes %q", writes)
	}
	l := logs.String()
	if n := strings.Count(l, "bcache fast path: why=\"desired state changed\" converged=1"); n != 1 {
		t.Errorf("%d fast paths for the bcache change, want 1:\n%s", n, l)
	}
	if n := strings.Count(l, "bcache fast path"); n != 1 {
		t.Errorf("the lvm change took the fast path:\n%s", l)
	}
	// Its plan used the sysfs read made while the desired state loaded:
	// only the verification read sysfs again.
	if n := strings.Count(l, "bcache sysfs probe and plan"); n != 1 {
		t.Errorf("%d sysfs reads in the fast path, want 1 (the verification):\n%s", n, l)
	}
	if strings.Contains(l, "context canceled") {
		t.Errorf("a probe was started for the bcache change and cancelled:\n%s", l)
	}
	if !strings.Contains(l, "the change touches bcache devices only") {
		t.Errorf("log:\n%s", l)
	}
}

func TestMaybeBcacheOnly(t *testing.T) {
	a := New([]string{"/etc/keel"}, Wiring{Source: probes.Source{Runner: failingRunner{}}})
	a.SkipOwnerCheck = true
	files := func(texts ...string) []schema.File {
		var fs []schema.File
		for i, s := range texts {
			fs = append(fs, schema.File{Name: "/etc/keel/" + strconv.Itoa(i) + ".cue", Data: []byte(s)})
		}
		return fs
	}
	lvm := "lvm: scanLVs: true\n"
	if err := a.LoadFiles(files(bcacheCue(40), lvm), nil); err != nil {
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
