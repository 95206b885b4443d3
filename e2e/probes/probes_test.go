//go:build e2e

// Package probes_e2e checks keel's probe layer on the real kernel: in the
// test guest, each stack is recorded with `keel snapshot --verify` (the
// replay of the written snapshot must give the same model as the live pass
// that recorded it), and on the host the same snapshot must replay to the
// model the guest printed with `keel status --node --format json`.
package probes_e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keel-storage/keel/e2e/guest"
	"github.com/keel-storage/keel/probes"
	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/model"
)

// prelude starts every scenario of this package: the stack helpers, the
// three capture disks as $nv, $hd, $ssd, and the stock lvm.conf kept.
const prelude = `set -uo pipefail
. /mnt/host/stacks.sh
nv=$(disk nvme0) || exit 2
hd=$(disk hdd1) || exit 2
ssd=$(disk ssd2) || exit 2
lvm_conf_save
`

const script = prelude + `rec() { # rec NAME: record with --verify, then the replay and live status
	"$KEEL" snapshot --verify -o "$OUT/$1.txtar" || { echo "verify $1 failed"; exit 1; }
	"$KEEL" status --node "$OUT/$1.txtar" --format json >"$OUT/$1.replay.json" || exit 1
	"$KEEL" status >"$OUT/$1.status.txt" || exit 1
	lvmconfig --typeconfig full devices/scan_lvs >"$OUT/$1.scan_lvs" || exit 1
	# LVM's own segment rows of the thin volumes, which keel's report
	# leaves out: keel's argv from the snapshot, its selection turned round.
	grep -m1 '^\["lvm","fullreport",' "$OUT/$1.txtar" |
		sed -e 's/^\["//' -e 's/"\]$//' -e 's/","/\x1f/g' -e 's/segtype!=thin/segtype=thin/' >/tmp/thin.argv
	IFS=$'\x1f' read -r -a FR </tmp/thin.argv
	[ "${FR[1]:-}" = fullreport ] || { echo "no lvm fullreport in $1.txtar"; exit 1; }
	"${FR[@]}" >"$OUT/$1.thinsegs.json" || exit 1
}
rec empty
stack_vdo_split "$nv" "$hd" && rec vdo-split || exit 1
step lvextend -q -L +4G vdosplit/pool "$hd" && rec vdo-split-grown || exit 1
stack_teardown "$nv" "$hd" "$ssd"
# A thin volume in each pool (tp does not zero, tpbad does) and a thin
# snapshot, which LVM leaves inactive.
stack_thin "$nv" && step lvcreate -y -V 1G -n vm-102-disk-0 --thinpool tpbad thinvg &&
	step lvcreate -y -s -n snap-101 thinvg/vm-101-disk-0 && rec thin || exit 1
stack_teardown "$nv" "$hd" "$ssd"
# scan_lvs on for the last stack, so that the live status must show a value
# other than trixie's default.
stack_bcache "$ssd" "$hd" && bcache_tunables "$ssd" && lvm_conf_article && rec bcache || exit 1
exit 0
`

// runStacks boots the guest with the capture disks (NVMe 64G, HDD 128G, SSD
// 16G), keel, the shared stacks.sh and the extra files, runs script and
// requires it to pass.
func runStacks(tb testing.TB, script string, extra map[string][]byte) *guest.Result {
	tb.Helper()
	stacks, err := os.ReadFile(filepath.Join(guest.RepoRoot(tb), "e2e", "scenarios", "stacks.sh"))
	if err != nil {
		tb.Fatal(err)
	}
	files := map[string][]byte{"stacks.sh": stacks}
	for k, v := range extra {
		files[k] = v
	}
	r := guest.Run(tb, guest.Spec{
		Disks: []guest.Disk{{Kind: guest.NVMe, Size: "64G", Serial: "nvme0"}, {Kind: guest.HDD, Size: "128G", Serial: "hdd1"},
			{Kind: guest.SSD, Size: "16G", Serial: "ssd2"}},
		Files:   files,
		Script:  script,
		Keel:    true,
		Mem:     "3G",
		Timeout: 10 * time.Minute,
	})
	r.RequireOK(tb)
	return r
}

func TestLiveMatchesReplay(t *testing.T) {
	r := runStacks(t, script, nil)
	models := map[string]*model.Host{}
	for _, name := range []string{"empty", "vdo-split", "vdo-split-grown", "thin", "bcache"} {
		snap, err := hostio.ReadSnapshotFile(filepath.Join(r.Dir, "out", name+".txtar"))
		if err != nil {
			t.Fatal(err)
		}
		h, err := probes.Probe(context.Background(), hostio.Replay(snap))
		if err != nil {
			t.Fatalf("%s: host replay: %v", name, err)
		}
		models[name] = h
		checkNoPVSegRows(t, name, snap, h)
		thinRows, err := r.File(name + ".thinsegs.json")
		if err != nil {
			t.Fatal(err)
		}
		checkThinSegments(t, name, thinRows, h)
		guestJSON, err := r.File(name + ".replay.json")
		if err != nil {
			t.Fatal(err)
		}
		// As keel status --format json writes it: indented, with
		// "&&" and "<>" as typed (SetEscapeHTML(false)), and empty
		// lists as [] (model.EmptyLists).
		model.EmptyLists(h)
		var hostBuf bytes.Buffer
		enc := json.NewEncoder(&hostBuf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(h); err != nil {
			t.Fatal(err)
		}
		hostJSON := hostBuf.Bytes()
		if !bytes.Equal(bytes.TrimSpace(guestJSON), bytes.TrimSpace(hostJSON)) {
			t.Errorf("%s: the host's replay differs from the guest's", name)
		}
		status, err := r.File(name + ".status.txt")
		if err != nil {
			t.Fatal(err)
		}
		lvmconfig, err := r.File(name + ".scan_lvs")
		if err != nil {
			t.Fatal(err)
		}
		// The live status shows the value lvmconfig printed in the guest.
		if want := "lvm config: " + strings.TrimSpace(string(lvmconfig)) + " "; !strings.Contains(string(status), want) {
			t.Errorf("%s: live keel status lacks %q:\n%s", name, want, status)
		}
	}
	// The recovery journal sits at the fast tail of the split pool and moves
	// to the slow PV when the pool grows there.
	journalOn := func(h *model.Host) (string, bool) {
		p := h.VDOPools["vdosplit/pool"]
		if p == nil || p.OnDisk == nil {
			t.Fatalf("vdosplit/pool not probed: %+v", p)
		}
		for _, reg := range p.Regions {
			if reg.Name == "recovery journal" && len(reg.On) > 0 {
				return reg.On[len(reg.On)-1].PV, reg.Fast
			}
		}
		t.Fatal("no recovery journal region")
		return "", false
	}
	if _, fast := journalOn(models["vdo-split"]); !fast {
		t.Error("vdo-split: journal not on the fast PV")
	}
	if _, fast := journalOn(models["vdo-split-grown"]); fast {
		t.Error("vdo-split-grown: journal still reported on the fast PV after growing onto the slow one")
	}
	if tp := models["thin"].ThinPools["thinvg/tp"]; tp == nil || tp.ChunkSize != 512<<10 || tp.Zero || tp.MetadataSize != 128<<20 {
		t.Errorf("thin pool thinvg/tp = %+v", tp)
	}
	if n := len(models["bcache"].Bcache); n != 1 {
		t.Errorf("bcache: %d bcache devices probed, want 1", n)
	}
	for _, b := range models["bcache"].Bcache {
		if b.CacheMode != "writeback" || b.WritebackPercent != 40 || b.SequentialCutoff != 0 {
			t.Errorf("bcache = %+v", b)
		}
	}
}

// checkNoPVSegRows: keel's report selects no PV segment row (its pvseg
// subreport, docs/probes.md), and the live LVM printed none, though every
// stack with LVs (all but the empty and the bcache one) has them on PV
// extents.
func checkNoPVSegRows(t *testing.T, name string, snap *hostio.Snapshot, h *model.Host) {
	t.Helper()
	reports := 0
	for key, rec := range snap.Commands {
		if !strings.HasPrefix(key, "lvm fullreport ") || strings.Contains(key, "--readonly") {
			continue
		}
		reports++
		if !strings.HasSuffix(key, " --configreport pvseg -o pv_name -S pvseg_start<0") {
			t.Errorf("%s: report %q does not end in the pvseg selection", name, key)
		}
		var rep struct {
			Report []map[string][]json.RawMessage `json:"report"`
		}
		if err := json.Unmarshal(rec.Result.Stdout, &rep); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, el := range rep.Report {
			if n := len(el["pvseg"]); n != 0 {
				t.Errorf("%s: LVM printed %d PV segment rows", name, n)
			}
		}
	}
	if reports != 1 {
		t.Errorf("%s: %d fullreports recorded, want 1", name, reports)
	}
	onPVs := 0
	for _, lv := range h.LVs {
		for _, seg := range lv.Segments {
			onPVs += len(seg.PVRanges)
		}
	}
	if noLVs := name == "empty" || name == "bcache"; (onPVs == 0) != noLVs {
		t.Errorf("%s: %d PV ranges in the model", name, onPVs)
	}
}

// checkThinSegments: each thin volume's segment, which keel's report
// leaves out and the probe builds (probes.thinSegment), holds what LVM
// itself prints for it in out (keel's report with the selection turned
// round: thin volumes' segment rows alone).
func checkThinSegments(t *testing.T, name string, out []byte, h *model.Host) {
	t.Helper()
	var rep struct {
		Report []map[string][]map[string]string `json:"report"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("%s: thin segment rows: %v", name, err)
	}
	byUUID := map[string]*model.LV{}
	for _, lv := range h.LVs {
		byUUID[lv.UUID] = lv
	}
	rows := 0
	for _, el := range rep.Report {
		for _, row := range el["seg"] {
			rows++
			lv := byUUID[row["lv_uuid"]]
			if lv == nil || len(lv.Segments) != 1 || row["segtype"] != "thin" {
				t.Errorf("%s: LVM's thin segment row %v: keel's LV %+v", name, row, lv)
				continue
			}
			got := map[string]string{}
			for k, v := range lv.Segments[0].Fields.All() {
				got[k] = v
			}
			if !maps.Equal(got, row) {
				t.Errorf("%s: %s: keel's segment\n%v\nLVM's row\n%v", name, lv.FullName, got, row)
			}
		}
	}
	thin := 0
	for _, lv := range h.LVs {
		if lv.SegType == "thin" {
			thin++
		}
	}
	if rows != thin || (name == "thin") != (thin == 3) {
		t.Errorf("%s: LVM printed %d thin segment rows, keel has %d thin volumes", name, rows, thin)
	}
}
