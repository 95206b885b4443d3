package converge

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/reconcile/activation"
	"github.com/keel-storage/keel/reconcile/apply/executor"
	"github.com/keel-storage/keel/reconcile/converge/convergetest"
	"github.com/keel-storage/keel/reconcile/plan"
)

func TestLiveBootActionsKeepsOnlyLiveEdits(t *testing.T) {
	in := []plan.Action{
		{ID: "lvm.scan_lvs:lvm.conf", Kind: plan.KindLVMConf, Class: plan.Live},
		{ID: "bcache.tunable:x", Kind: plan.KindSysfs, Class: plan.Live},
		{ID: "vg.missing:vdovg", Kind: plan.KindCommand, Class: plan.Live},
		{ID: "vdo.threads:vg/p", Kind: plan.KindCommand, Class: plan.Maintenance},
		{ID: "lv.absent:vg/old", Kind: plan.KindWipe, Class: plan.Destructive},
	}
	got := LiveBootActions(in)
	if len(got) != 2 || got[0].ID != in[0].ID || got[1].ID != in[1].ID {
		t.Errorf("kept %+v", got)
	}
}

// failRunner fails every command: InstallRules must not run udevadm for a
// root other than /.
type failRunner struct{ t *testing.T }

func (f failRunner) Run(_ context.Context, c hostio.Cmd) (hostio.Result, error) {
	f.t.Errorf("ran %s", c)
	return hostio.Result{ExitCode: 1}, nil
}

func TestInstallRulesWritesOnlyChanges(t *testing.T) {
	root := t.TempDir()
	files := []activation.RuleFile{{Path: activation.PVScanRule, Content: "a\n"}, {Path: activation.BcacheRule, Content: "b\n"}}
	w, err := InstallRules(context.Background(), files, root, failRunner{t})
	if err != nil || len(w) != 2 {
		t.Fatalf("first install: %v %v", w, err)
	}
	got, err := os.ReadFile(filepath.Join(root, activation.BcacheRule))
	if err != nil || string(got) != "b\n" {
		t.Fatalf("content %q %v", got, err)
	}
	files[1].Content = "b2\n"
	w, err = InstallRules(context.Background(), files, root, failRunner{t})
	if err != nil || len(w) != 1 || w[0] != activation.BcacheRule {
		t.Errorf("second install wrote %v (%v)", w, err)
	}
	if m, _ := filepath.Glob(filepath.Join(root, activation.RulesDir, "*.keel-tmp")); len(m) != 0 {
		t.Errorf("temporary files left: %v", m)
	}
}

// slowRunner runs every command for d and records, per command, whether
// its context had ended by then: what a killed command would have seen.
type slowRunner struct {
	d    time.Duration
	mu   *sync.Mutex
	cmds *[]string
}

func (r slowRunner) Run(ctx context.Context, c hostio.Cmd) (hostio.Result, error) {
	time.Sleep(r.d)
	r.mu.Lock()
	defer r.mu.Unlock()
	*r.cmds = append(*r.cmds, fmt.Sprintf("%s ctx=%v", strings.Join(c.Argv(), " "), ctx.Err()))
	return hostio.Result{}, nil
}

// An activation command is never cut short by the caller's context (the
// signal systemd sends at shutdown): the running one finishes and the next
// does not start. Running hears of each command and of the end.
func TestRunActivationNeverCancelsACommand(t *testing.T) {
	var mu sync.Mutex
	var ran []string
	l := New(nil, Wiring{StateDir: t.TempDir(), Source: hostio.Source{Runner: failingRunner{}},
		Runner: slowRunner{d: 50 * time.Millisecond, mu: &mu, cmds: &ran}})
	order := activation.Plan{Steps: []activation.Step{
		{Layer: activation.Layer{VG: "lower"}, Status: activation.Activate, Commands: [][]string{{"vgchange", "-aay", "lower"}}},
		{Layer: activation.Layer{VG: "other"}, Status: activation.Activate, Commands: [][]string{{"vgchange", "-aay", "other"}}},
	}}
	ctx, cancel := context.WithCancel(context.Background())
	var heard []string
	running := func(argv []string) {
		if argv == nil {
			heard = append(heard, "done")
			return
		}
		heard = append(heard, strings.Join(argv, " "))
		cancel() // systemd stops the unit while the command runs
	}
	if n := l.runActivation(ctx, order, map[string]int{}, running, false); n != 1 {
		t.Fatalf("ran %d commands", n)
	}
	want := []string{"vgchange -aay lower ctx=<nil>"}
	if !slices.Equal(ran, want) {
		t.Errorf("commands %q, want %q", ran, want)
	}
	if w := []string{"vgchange -aay lower", "done"}; !slices.Equal(heard, w) {
		t.Errorf("Running heard %q, want %q", heard, w)
	}
}

// In audit mode keel activate runs lvm2's own autoactivation command and
// nothing else: the pvscan of a PV on an LV is keel's addition and is left
// out.
func TestActivationActionsAuditKeepsVgchangeOnly(t *testing.T) {
	order := activation.Plan{Steps: []activation.Step{
		{Layer: activation.Layer{VG: "upper"}, Status: activation.Activate,
			Commands: [][]string{{"pvscan", "--cache", "/dev/lower/lv"}, {"vgchange", "-aay", "upper"}}},
	}}
	var got []string
	for _, a := range activationActions(order, map[string]int{}, true) {
		got = append(got, strings.Join(a.Commands[0], " "))
	}
	if want := []string{"vgchange -aay upper"}; !slices.Equal(got, want) {
		t.Errorf("audit: %q, want %q", got, want)
	}
	if n := len(activationActions(order, map[string]int{}, false)); n != 2 {
		t.Errorf("converge: %d commands, want 2", n)
	}
}

// Activate in audit mode writes no lvm.conf and no sysfs attribute on a host
// where both drifted; the same host and desired state without audit
// rewrite them, so the recording sees a change when there is one.
func TestActivateAuditChangesNothing(t *testing.T) {
	const desired = "lvm: scanLVs: true\nbcache: b0: {\n\tbacking: \"a67c2e52-040c-493e-99e7-8498486cebf1\"\n\twritebackPercent: 40\n}\n"
	const conf = "devices {\n\tscan_lvs = 0\n}\n"
	for _, audit := range []bool{false, true} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "d.cue"), []byte(desired), 0o644); err != nil {
			t.Fatal(err)
		}
		lvmConf := filepath.Join(t.TempDir(), "lvm.conf")
		if err := os.WriteFile(lvmConf, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		src, sys, _ := convergetest.Replayed(t, "../../probes/testdata/snapshots/mixed.txtar")
		run := &convergetest.RecordingRunner{}
		l := New([]string{dir}, Wiring{Source: src, Runner: run, SysFS: sys, DpkgDir: t.TempDir(), LVMConfPath: lvmConf,
			FileRoot: t.TempDir(), StateDir: t.TempDir(), Options: executor.Options{MaxAttempts: 1}, SkipOwnerCheck: true})
		if err := l.Load(l.Read()); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Activate(context.Background(), ActivateOptions{Deadline: time.Now(), Audit: audit}); err != nil {
			t.Fatalf("audit %v: %v", audit, err)
		}
		b, _ := os.ReadFile(lvmConf)
		changed := string(b) != conf || sys.WriteLog() != ""
		for _, c := range run.Cmds {
			if !strings.HasPrefix(c, "vgchange -aay ") {
				changed = true
			}
		}
		if changed != !audit {
			t.Errorf("audit %v: lvm.conf %q, sysfs writes %q, commands %q", audit, b, sys.WriteLog(), run.Cmds)
		}
	}
}

// Waited is called once, after the wait for lvm2 and before the first
// probe has run a command, however many rounds the activation takes.
func TestActivateWaitedOnceBeforeTheFirstProbe(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "d.cue"), []byte("volumeGroups: vdovg: pvs: [\"/dev/sdz\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src, sys, counted := convergetest.Replayed(t, "../../probes/testdata/snapshots/mixed.txtar")
	l := New([]string{dir}, Wiring{Source: src, Runner: &convergetest.RecordingRunner{}, SysFS: sys, DpkgDir: t.TempDir(),
		LVMConfPath: filepath.Join(t.TempDir(), "lvm.conf"), FileRoot: t.TempDir(), StateDir: t.TempDir(),
		Options: executor.Options{MaxAttempts: 1}, SkipOwnerCheck: true})
	if err := l.Load(l.Read()); err != nil {
		t.Fatal(err)
	}
	var calls []int64
	_, _ = l.Activate(context.Background(), ActivateOptions{Deadline: time.Now().Add(30 * time.Millisecond), Poll: 10 * time.Millisecond,
		Waited: func() { calls = append(calls, counted.N.Load()) }})
	if len(calls) != 1 || calls[0] != 0 {
		t.Errorf("Waited called %d times, with %v commands run before each; want once, before any", len(calls), calls)
	}
	if counted.N.Load() == 0 {
		t.Error("no probe ran")
	}
}
