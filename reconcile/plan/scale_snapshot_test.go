package plan

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/keel-storage/keel/probes"
	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/model"
)

// scaleSnapshotDir holds the guest captures of hosts with thousands of VM
// disks (e2e/capture-fixtures.sh scale-thin scale-vdo; built by
// e2e/scenarios/scale.sh): gzipped and apart from the snapshot set the
// other tests read, since each is megabytes of `lvm fullreport`.
const scaleSnapshotDir = "../../probes/testdata/scale"

// scaleCase is one captured host and what must come out of it.
type scaleCase struct {
	name     string
	vg       string // the VG holding the VM disks
	disks    int    // VM disks (vm-*) in it
	scaled   int    // of them made by scale.sh: vm-<1000+i>-disk-0, i = 1..scaled
	active   int    // VM disks active
	thinPool string // "vg/pool" holding the scaled disks, or "" for linear disks
	findings []string
	// retried: on this host the first `lvm fullreport` exits 5: the VDO
	// pool held more data blocks than its LVs map, its vdo_saving_percent
	// failed ("percentage too large", lvm2 2.03.31 in the guest) and LVM
	// left the pool and its VDO LV out of the report. The probe reads
	// again, only the pool's VG (retriedVG), without that field
	// (probes/lvm_fieldfail.go); the case requires both reports recorded
	// and the pool seen.
	retried, retriedVG string
	// desired is the desired state (reconcile/plan/testdata/desired) that
	// BenchmarkCheckScale checks the host against.
	desired string
}

var scaleCases = []scaleCase{
	{name: "scale-vdo-50", vg: "vdovg", disks: 49, scaled: 48, active: 49, desired: "vdo-thick",
		findings: []string{"vdo.slab_remainder vdolab/vdopool", "vdo.threads vdolab/vdopool"}},
	{name: "scale-vdo", vg: "vdovg", disks: 2001, scaled: 2000, active: 51, desired: "vdo-thick",
		retried: "report function failed for field vdo_saving_percent", retriedVG: "vdolab",
		findings: []string{"vdo.slab_remainder vdolab/vdopool", "vdo.threads vdolab/vdopool"}},
	{name: "scale-thin", vg: "thinscale", disks: 2000, scaled: 2000, active: 50, thinPool: "thinscale/tp", desired: "scale-thin"},
}

func readScaleSnapshot(tb testing.TB, name string) *hostio.Snapshot {
	tb.Helper()
	f, err := os.Open(scaleSnapshotDir + "/" + name + ".txtar.gz")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	var b bytes.Buffer
	if _, err := io.Copy(&b, z); err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	s, err := hostio.ParseSnapshot(b.Bytes())
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	return s
}

// replayScale reads the capture name and replays its probe pass.
func replayScale(tb testing.TB, name string) (*hostio.Snapshot, *model.Host) {
	tb.Helper()
	s := readScaleSnapshot(tb, name)
	return s, replayAgain(tb, s)
}

// replayAgain replays the probe pass of s.
func replayAgain(tb testing.TB, s *hostio.Snapshot) *model.Host {
	tb.Helper()
	h, err := probes.Probe(context.Background(), hostio.Replay(s))
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

// TestScaleSnapshots replays each captured host: the probe sees every VM
// disk, the active ones, the thin pool's devices, and the audit's findings
// are exactly the ones this stack has.
func TestScaleSnapshots(t *testing.T) {
	for _, c := range scaleCases {
		t.Run(c.name, func(t *testing.T) {
			snap, h := replayScale(t, c.name)
			if c.retried != "" {
				var exits []int
				for _, rec := range snap.Commands {
					if len(rec.Argv) > 1 && rec.Argv[0] == "lvm" && rec.Argv[1] == "fullreport" {
						exits = append(exits, rec.Result.ExitCode)
						if rec.Result.ExitCode == 5 && !strings.Contains(string(rec.Result.Stdout), c.retried) {
							t.Errorf("the failed report does not say %q", c.retried)
						}
						if rec.Result.ExitCode == 0 && !slices.Equal(rec.Argv[len(rec.Argv)-2:], []string{"--", c.retriedVG}) {
							t.Errorf("the retry asks for %v, want only VG %s", rec.Argv[len(rec.Argv)-2:], c.retriedVG)
						}
					}
				}
				slices.Sort(exits)
				if !slices.Equal(exits, []int{0, 5}) {
					t.Errorf("lvm fullreport exits %v, want one failed (5) and its retry (0)", exits)
				}
				if _, ok := h.LVs["vdolab/vdopool"]; !ok || h.VDOPools["vdolab/vdopool"] == nil {
					t.Errorf("the VDO pool LVM left out of the first report is not seen")
				}
			}
			disks, active, inPool := 0, 0, 0
			for _, lv := range h.LVs {
				if lv.VG != c.vg || !strings.HasPrefix(lv.Name, "vm-") {
					continue
				}
				disks++
				if lv.Active {
					active++
				}
				if c.thinPool != "" && lv.SegType == "thin" && lv.Pool == c.thinPool {
					inPool++
				}
			}
			if disks != c.disks || active != c.active {
				t.Errorf("%s: %d VM disks, %d active; want %d, %d", c.vg, disks, active, c.disks, c.active)
			}
			for i := 1; i <= c.scaled; i++ {
				if _, ok := h.LVs[fmt.Sprintf("%s/vm-%d-disk-0", c.vg, 1000+i)]; !ok {
					t.Errorf("%s/vm-%d-disk-0 missing", c.vg, 1000+i)
					break
				}
			}
			if c.thinPool != "" && inPool != c.scaled {
				t.Errorf("%d thin LVs in %s, want %d", inPool, c.thinPool, c.scaled)
			}
			var ids []string
			for _, f := range Audit(h).Findings {
				ids = append(ids, string(f.ID)+" "+f.Object)
			}
			slices.Sort(ids)
			if !slices.Equal(ids, c.findings) {
				t.Errorf("audit findings:\n%s\nwant:\n%s", strings.Join(ids, "\n"), strings.Join(c.findings, "\n"))
			}
		})
	}
}

// BenchmarkScaleSnapshots is probe-parse plus audit plan on the captured
// hosts of ~50 and 2,000 LVs: the real-host points beside BenchmarkScale's
// synthetic ones (e2e/bench/report derives the slope per LV from them).
func BenchmarkScaleSnapshots(b *testing.B) {
	for _, c := range scaleCases {
		b.Run(c.name, func(b *testing.B) {
			s, h := replayScale(b, c.name)
			b.ReportAllocs()
			for b.Loop() {
				obs := replayAgain(b, s)
				if len(obs.LVs) != len(h.LVs) {
					b.Fatalf("%d LVs, want %d", len(obs.LVs), len(h.LVs))
				}
				Audit(obs)
			}
			b.ReportMetric(float64(len(h.LVs)), "lvs")
		})
	}
}
