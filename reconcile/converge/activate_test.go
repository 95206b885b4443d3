package converge

import (
	"context"
	"os"
	"path/filepath"
	"testing"

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
