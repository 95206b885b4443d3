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
	if n := l.runActivation(ctx, order, map[string]int{}, running); n != 1 {
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
