package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-storage/keel/probes"
	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/reconcile/plan"
)

// keel apply --dry-run diffs the file the writer changes: on the test
// guest's capture with lvmlocal.conf's scan_lvs = 0 winning over lvm.conf,
// that is lvmlocal.conf, and lvm.conf is left as it is.
func TestFileDiffsFollowTheCascade(t *testing.T) {
	snap, err := hostio.ReadSnapshotFile(filepath.Join("..", "..", "reconcile", "plan", "testdata", "snapshots", "lvmconf-local.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := probes.Probe(context.Background(), hostio.Replay(snap))
	if err != nil {
		t.Fatal(err)
	}
	on := true
	diffs := fileDiffs(plan.Action{LVMConf: &plan.LVMConfChange{ScanLVs: &on}}, h)
	if len(diffs) != 1 || !strings.Contains(diffs[0], "/etc/lvm/lvmlocal.conf") ||
		!strings.Contains(diffs[0], "+\tscan_lvs = 1") || strings.Contains(diffs[0], "/etc/lvm/lvm.conf") {
		t.Errorf("diffs %q, want one diff of /etc/lvm/lvmlocal.conf setting scan_lvs = 1", diffs)
	}
}
