package converge

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/reconcile/apply/executor"
	"github.com/keel-storage/keel/reconcile/converge/convergetest"
	"github.com/keel-storage/keel/reconcile/plan"
)

// failingRunner answers every probe command with an error, so a pass
// cannot get past the probe.
type failingRunner struct{}

func (failingRunner) Run(context.Context, hostio.Cmd) (hostio.Result, error) {
	return hostio.Result{ExitCode: -1}, errors.New("no host here")
}

func TestInvalidConfigKeepsLastGood(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "desired.cue")
	os.WriteFile(f, []byte("lvm: scanLVs: false\n"), 0o644)
	a := New([]string{dir}, Wiring{StateDir: t.TempDir(), Source: hostio.Source{Runner: failingRunner{}, FS: hostio.DirFS(t.TempDir())}})
	if err := a.Load(a.Read()); err != nil {
		t.Fatal(err)
	}
	good := a.Desired()
	if good == nil || good.LVM == nil || good.LVM.ScanLVs == nil || *good.LVM.ScanLVs {
		t.Fatalf("loaded %+v", good)
	}
	os.WriteFile(f, []byte("lvm: scanLVs: 7\n"), 0o644)
	if err := a.Load(a.Read()); err == nil {
		t.Fatal("invalid desired state loaded")
	}
	if a.Desired() != good {
		t.Fatal("the last good desired state was replaced")
	}
	res, err := a.pass(context.Background(), Options{Mode: executor.Mode{DryRun: true}})
	if err == nil {
		t.Fatal("pass without a host succeeded")
	}
	if len(res.Findings) != 1 || res.Findings[0].ID != plan.ConfigInvalid || res.Findings[0].Severity != plan.Error ||
		!strings.Contains(res.Findings[0].Observed, "desired.cue:1") {
		t.Fatalf("findings %+v", res.Findings)
	}
	os.WriteFile(f, []byte("lvm: scanLVs: true\n"), 0o644)
	if err := a.Load(a.Read()); err != nil || !*a.Desired().LVM.ScanLVs {
		t.Fatalf("valid desired state not loaded: %v", err)
	}
	if res, _ := a.pass(context.Background(), Options{Mode: executor.Mode{DryRun: true}}); len(res.Findings) != 0 {
		t.Fatalf("config.invalid kept after a valid load: %+v", res.Findings)
	}
}

func TestPassWithoutDesiredState(t *testing.T) {
	a := New(nil, Wiring{StateDir: t.TempDir(), Source: hostio.Source{Runner: failingRunner{}}})
	if _, err := a.pass(context.Background(), Options{Mode: executor.Mode{DryRun: true}}); !errors.Is(err, ErrNoDesiredState) {
		t.Fatalf("err %v", err)
	}
}

// The bcache fast path plans from sysfs alone and writes at once. The
// snapshot's bcache0 (recorded in the guest) has writeback_percent 10.
func TestBcachePass(t *testing.T) {
	snap, err := hostio.ReadSnapshotFile("../../probes/testdata/snapshots/mixed.txtar")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "b.cue"), []byte(`bcache: b0: {
	backing:          "a67c2e52-040c-493e-99e7-8498486cebf1"
	writebackPercent: 40
}
`), 0o644)
	sys := convergetest.NewMemSysFS()
	a := New([]string{dir}, Wiring{StateDir: t.TempDir(), Source: hostio.Replay(snap), SysFS: sys, Options: executor.Options{MaxAttempts: 1}})
	if err := a.Load(a.Read()); err != nil {
		t.Fatal(err)
	}
	rep, err := a.BcachePass(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sys.Writes) != 1 || sys.Writes[0] != "/sys/block/bcache0/bcache/writeback_percent=40" {
		t.Fatalf("writes %q", sys.Writes)
	}
	// The replayed host does not change, so the full re-probe still sees
	// 10: not converged, and with one attempt allowed, stuck.
	if len(rep.Results) != 1 || rep.Results[0].Status != executor.Stuck {
		t.Fatalf("%+v", rep.Results)
	}
}

// An lvm.conf whose global_filter keel cannot parse is refused at once
// (reconcile.refused), never retried into reconcile.stuck.
func TestUnparsableFilterRefused(t *testing.T) {
	snap, err := hostio.ReadSnapshotFile("../../probes/testdata/snapshots/mixed.txtar")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "l.cue"), []byte("lvm: globalFilter: reject: [\"^/dev/zd.*\"]\n"), 0o644)
	conf := filepath.Join(t.TempDir(), "lvm.conf")
	broken := "devices {\n\tglobal_filter = [ \"r|/dev/zd.*\" ]\n}\n"
	os.WriteFile(conf, []byte(broken), 0o644)
	a := New([]string{dir}, Wiring{StateDir: t.TempDir(), Source: hostio.Replay(snap), DpkgDir: t.TempDir(), LVMConfPath: conf})
	if err := a.Load(a.Read()); err != nil {
		t.Fatal(err)
	}
	res, err := a.pass(context.Background(), Options{Mode: executor.Mode{}})
	if err != nil {
		t.Fatal(err)
	}
	var got *executor.Result
	for i := range res.Report.Results {
		if res.Report.Results[i].Action.Kind == plan.KindLVMConf {
			got = &res.Report.Results[i]
		}
	}
	if got == nil || got.Status != executor.Refused || got.Attempts != 1 || !strings.Contains(got.Detail, "will not rewrite a filter it cannot parse") {
		t.Fatalf("%+v", got)
	}
	if b, _ := os.ReadFile(conf); string(b) != broken {
		t.Fatal("lvm.conf changed")
	}
}

// config.invalid is in the finding catalogue with the severity the loop
// raises it at.
func TestConfigInvalidCatalogued(t *testing.T) {
	if r, ok := plan.Lookup(plan.ConfigInvalid); !ok || r.Severity != plan.Error || !r.Runtime() {
		t.Errorf("catalogue entry %+v (found %v)", r, ok)
	}
}
