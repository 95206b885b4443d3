package removal

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/keel-storage/keel/probes"
	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/model"
)

// The node snapshots in reconcile/apply/wipe/testdata (kept beside the
// applier's blkid captures) were recorded by e2e/wipe/scenario.sh in the
// test guest: node-setup.txtar after the setup (vdolab on the NVMe with a
// VDO pool, a thin pool and small LVs, vdolab/openlv held open, vdolab/pvlv
// made an orphan PV, vms stacked on the VDO LV, other on the HDD).

// scenarioDecl is e2e/wipe/wipe.cue's VGs and absent lists.
var scenarioDecl = Declared{"vdolab": {"thin-1"}, "vms": {"vm-100-disk-0"}}

// recorded is the node snapshot name of the applier's testdata, probed
// and observed as Plan observes it.
func recorded(t *testing.T, name string) *observed {
	t.Helper()
	return observe(snapshotHost(t, "../../apply/wipe/testdata/"+name))
}

// snapshotHost probes the node snapshot at path (gzipped when it ends in
// .gz, as the scale captures are).
func snapshotHost(tb testing.TB, path string) *model.Host {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	if strings.HasSuffix(path, ".gz") {
		z, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			tb.Fatal(err)
		}
		if b, err = io.ReadAll(z); err != nil {
			tb.Fatal(err)
		}
	}
	s, err := hostio.ParseSnapshot(b)
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	h, err := probes.Probe(context.Background(), hostio.Replay(s))
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

func TestObserveSetup(t *testing.T) {
	o := recorded(t, "node-setup.txtar")
	for key, want := range map[string]string{
		"vdolab/vpool":       "vdo-pool",
		"vdolab/vdolv":       "vdo",
		"vdolab/tpool":       "thin-pool",
		"vdolab/thin-1":      "thin",
		"vms/vm-100-disk-0":  "linear",
		"vdolab/openlv":      "linear",
		"vdolab/vpool_vdata": "linear",
		"other/data":         "linear",
	} {
		lv, ok := o.LVs[key]
		if !ok || lv.SegType != want {
			t.Errorf("%s: %+v, want segtype %s", key, lv, want)
		}
	}
	if !o.LVs["vdolab/openlv"].Open || o.LVs["vdolab/keep"].Open {
		t.Errorf("open flags: openlv %v keep %v", o.LVs["vdolab/openlv"].Open, o.LVs["vdolab/keep"].Open)
	}
	if !o.LVs["vdolab/vpool_vdata"].Hidden {
		t.Error("vpool_vdata not hidden")
	}
	for key, want := range map[string]string{
		"vms/vm-100-disk-0": "vdo [/dev/vdolab/vdolv] other []",
		"vdolab/keep":       "vdo [] other [/dev/nvme0n1]",
		"other/data":        "vdo [] other [/dev/sda]",
	} {
		vdo, other := o.vdoUnder(o.LVs[key])
		if got := fmt.Sprintf("vdo %v other %v", vdo, other); got != want {
			t.Errorf("under %s: %s, want %s", key, got, want)
		}
	}
	var pvlv bool
	for _, pv := range o.PVs {
		if o.pvDMName(pv) == "vdolab-pvlv" && pv.VG == "" {
			pvlv = true
		}
	}
	if !pvlv {
		t.Errorf("orphan PV on vdolab/pvlv not found: %+v", o.PVs)
	}
}

func TestPlanOnRecordedHost(t *testing.T) {
	o := recorded(t, "node-setup.txtar")
	for name, want := range map[string]string{
		"vdolab/openlv":      "is open",
		"vdolab/pvlv":        "is a PV",
		"vdolab/vdolv":       "is a VDO LV",
		"vdolab/vpool":       "is a VDO pool",
		"vdolab/tpool":       "is a thin pool",
		"vdolab/vpool_vdata": "hidden sub-LV",
		"other/data":         "vg other is not declared",
	} {
		_, err := Plan(o.Host, scenarioDecl, Request{Names: []string{name}, Mode: ModeDiscard})
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", name, err, want)
		}
	}
	targets, err := Plan(o.Host, scenarioDecl, Request{Names: []string{"vms/vm-100-disk-0", "vdolab/thin-1", "vdolab/keep"}, Mode: ModeDiscard})
	if err != nil {
		t.Fatal(err)
	}
	if len(targets) != 3 {
		t.Fatalf("targets %+v", targets)
	}
	if tg := targets[0]; tg.Mode != ModeDiscard || tg.Resume || len(tg.Notes) != 0 || tg.Size != 256<<20 {
		t.Errorf("vm-100-disk-0 on VDO: %+v", tg)
	}
	if tg := targets[1]; tg.Mode != ModeDiscard || len(tg.Notes) != 0 {
		t.Errorf("thin-1: %+v", tg)
	}
	if tg := targets[2]; tg.Mode != ModeZeroOut || len(tg.Notes) != 1 {
		t.Errorf("keep (thick, not on VDO) in discard mode: %+v", tg)
	}
	if _, err := Plan(o.Host, scenarioDecl, Request{Names: []string{"vdolab/keep"}, RequireAbsent: true}); !errors.Is(err, ErrRefused) {
		t.Errorf("keep is not absent: got %v", err)
	}
}

// node-killed.txtar was recorded after keel was killed with SIGKILL while it
// zeroed vms/big: the LV is left as vms/del-big with keel's tag.
func TestPlanResumesRecordedKill(t *testing.T) {
	o := recorded(t, "node-killed.txtar")
	del, ok := o.LVs["vms/del-big"]
	if !ok || !hasTag(del, Tag) {
		t.Fatalf("vms/del-big: %+v", del)
	}
	for _, req := range []Request{{Mode: ModeDiscard}, {Names: []string{"vms/big"}, Mode: ModeDiscard}} {
		targets, err := Plan(o.Host, scenarioDecl, req)
		if err != nil {
			t.Fatal(err)
		}
		if len(targets) != 1 {
			t.Fatalf("%+v: targets %+v", req, targets)
		}
		tg := targets[0]
		if tg.Name() != "vms/big" || tg.DelName() != "vms/del-big" || !tg.Resume || tg.Mode != ModeDiscard || tg.Size != 1<<30 {
			t.Errorf("%+v: resume target %+v", req, tg)
		}
	}
	// Without keel's tag and not absent, a del-* LV is not keel's to finish.
	del.Fields.Set("lv_tags", "")
	if targets, err := Plan(o.Host, scenarioDecl, Request{Mode: ModeDiscard}); err != nil || len(targets) != 0 {
		t.Errorf("untagged del-big: targets %+v err %v", targets, err)
	}
}
