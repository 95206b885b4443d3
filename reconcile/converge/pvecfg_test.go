package converge

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-storage/keel/probes"
	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/reconcile/apply/executor"
	"github.com/keel-storage/keel/reconcile/plan"
)

// A host probed while the desired state loaded (the daemon's early probe)
// read the storage.cfg of the desired state before; the pass reads that
// part again where the one in force says, and plans on it. The source is
// the pass e2e/ownership/sharedcfg.sh recorded with storage.cfg at
// /etc/keel-pve/storage.cfg, unpinned, as a live host's.
func TestPassRereadsStorageCfg(t *testing.T) {
	snap, err := hostio.ReadSnapshotFile("../plan/testdata/snapshots/sharedcfg-custom.txtar")
	if err != nil {
		t.Fatal(err)
	}
	src := hostio.Replay(snap)
	src.PVEStorageCfg = ""
	early, err := probes.Probe(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	if early.PVEStorageCfg != probes.DefaultPVEStorageCfg {
		t.Fatalf("early probe read %s", early.PVEStorageCfg)
	}
	cue, err := os.ReadFile("../../e2e/ownership/sharedcfg-custom.cue")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "custom.cue"), cue, 0o644); err != nil {
		t.Fatal(err)
	}
	l := New([]string{dir}, Wiring{StateDir: t.TempDir(), Source: src})
	l.skipOwnerCheck = true
	if err := l.Load(l.Read()); err != nil {
		t.Fatal(err)
	}
	res, err := l.Converge(context.Background(), Options{Host: early, Mode: executor.Mode{DryRun: true}})
	if err != nil {
		t.Fatal(err)
	}
	var shared *plan.Finding
	for i, f := range res.Findings {
		switch f.ID {
		case plan.LVAbsentShared:
			shared = &res.Findings[i]
		case plan.PVEStorageCfgUnreadable:
			t.Errorf("planned on the early reading: %s", f.Message)
		}
	}
	if shared == nil || !strings.Contains(shared.Message, "Proxmox storage san3 has shared 1 in /etc/keel-pve/storage.cfg") {
		t.Fatalf("findings %+v", res.Findings)
	}
	if len(res.Report.Results) != 0 {
		t.Fatalf("actions %+v", res.Report.Results)
	}
}
