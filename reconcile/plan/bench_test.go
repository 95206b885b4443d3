package plan

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/keel-storage/keel/lvm/units"
	"github.com/keel-storage/keel/lvm/vdo"
	"github.com/keel-storage/keel/probes"
	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/schema/spec"
)

// benchBase is the capture the synthetic hosts are grown from: a split VDO
// pool on bcache, a VG stacked on the VDO LV with a VM disk, and bcache0.
const benchBase = "vdo-on-bcache"

const (
	benchVDOPools = 64
	benchBcache   = 64
)

var lvmUUID = regexp.MustCompile(`[A-Za-z0-9]{6}(-[A-Za-z0-9]{4}){5}-[A-Za-z0-9]{6}`)

// synthHost is a synthetic node snapshot and the desired state that goes
// with it.
type synthHost struct {
	snap    *hostio.Snapshot
	desired *spec.Config
	lvs     int
}

// renameVG rewrites every mention of VG old in s: names, paths, dm names
// (where LVM doubles dashes, which VG names here do not have) and UUIDs.
func renameVG(s, old, new string, n int) string {
	s = regexp.MustCompile(`\b`+regexp.QuoteMeta(old)+`\b`).ReplaceAllString(s, new)
	return lvmUUID.ReplaceAllStringFunc(s, func(u string) string { return fmt.Sprintf("%s%06d", u[:len(u)-6], n) })
}

// findCmd returns the key of the recorded command whose argv starts with prefix.
func findCmd(s *hostio.Snapshot, prefix ...string) string {
	for k, c := range s.Commands {
		if len(c.Argv) >= len(prefix) && strings.Join(c.Argv[:len(prefix)], " ") == strings.Join(prefix, " ") {
			return k
		}
	}
	return ""
}

// makeSynthHost grows the base capture into a host with lvs LVs, 64 VDO
// pools (each in its own VG, replicated from the captured pool's VG with
// its dm table and status lines, stats message and on-disk geometry) and 64
// bcache devices (replicated from bcache0's sysfs files with fresh UUIDs);
// the rest of the LVs are copies of the captured VM disk in the stacked VG.
func makeSynthHost(tb testing.TB, lvs int) synthHost {
	tb.Helper()
	base := replaySnapshot(tb, benchBase)
	s := &hostio.Snapshot{Host: base.Host, Version: base.Version, Time: base.Time,
		Commands: map[string]hostio.CmdRecord{}, Files: map[string]hostio.FileRecord{}}
	for k, v := range base.Commands {
		s.Commands[k] = v
	}
	for k, v := range base.Files {
		s.Files[k] = v
	}
	h, err := probes.Probe(context.Background(), hostio.Replay(base))
	if err != nil {
		tb.Fatal(err)
	}
	var pool *model.VDOPool
	for _, p := range h.VDOPools {
		pool = p
	}
	var disk *model.LV
	for _, key := range slices.Sorted(maps.Keys(h.LVs)) {
		if lv := h.LVs[key]; !lv.Hidden && lv.SegType == "linear" && lv.VG != pool.VG {
			disk = lv
			break
		}
	}
	if pool == nil || disk == nil || len(h.Bcache) != 1 {
		tb.Fatalf("%s: want one VDO pool, a linear LV in another VG and one bcache device", benchBase)
	}
	vg := pool.VG

	// lvm fullreport: one report element per VG.
	frKey := findCmd(s, "lvm", "fullreport")
	fr := s.Commands[frKey]
	var rep struct {
		Report []map[string][]map[string]string `json:"report"`
		Log    []map[string]string              `json:"log"`
	}
	if err := json.Unmarshal(fr.Result.Stdout, &rep); err != nil {
		tb.Fatal(err)
	}
	var vdoElem, diskElem map[string][]map[string]string
	for _, e := range rep.Report {
		if len(e["vg"]) == 1 && e["vg"][0]["vg_name"] == vg {
			vdoElem = e
		}
		if len(e["vg"]) == 1 && e["vg"][0]["vg_name"] == disk.VG {
			diskElem = e
		}
	}
	vdoJSON, _ := json.Marshal(vdoElem)
	for i := 1; i < benchVDOPools; i++ {
		var e map[string][]map[string]string
		if err := json.Unmarshal([]byte(renameVG(string(vdoJSON), vg, fmt.Sprintf("%s%02d", vg, i), i)), &e); err != nil {
			tb.Fatal(err)
		}
		rep.Report = append(rep.Report, e)
	}
	total := 0
	for _, e := range rep.Report {
		total += len(e["lv"])
	}
	var lvRow, segRow map[string]string
	for _, r := range diskElem["lv"] {
		if r["lv_name"] == disk.Name {
			lvRow = r
		}
	}
	for _, r := range diskElem["seg"] {
		if r["lv_name"] == disk.Name {
			segRow = r
		}
	}
	var dmDisk []string
	for n := 0; total < lvs; n++ {
		name := fmt.Sprintf("vm-%d-disk-0", 1000+n)
		clone := func(r map[string]string) map[string]string {
			b, _ := json.Marshal(r)
			out := strings.ReplaceAll(string(b), disk.Name, name)
			out = strings.ReplaceAll(out, strings.ReplaceAll(disk.Name, "-", "--"), strings.ReplaceAll(name, "-", "--"))
			var m map[string]string
			if err := json.Unmarshal([]byte(lvmUUID.ReplaceAllStringFunc(out, func(u string) string {
				return fmt.Sprintf("%s%06d", u[:len(u)-6], 100000+n)
			})), &m); err != nil {
				tb.Fatal(err)
			}
			return m
		}
		diskElem["lv"] = append(diskElem["lv"], clone(lvRow))
		diskElem["seg"] = append(diskElem["seg"], clone(segRow))
		dmDisk = append(dmDisk, strings.ReplaceAll(disk.DMName, strings.ReplaceAll(disk.Name, "-", "--"), strings.ReplaceAll(name, "-", "--")))
		total++
	}
	b, err := json.Marshal(rep)
	if err != nil {
		tb.Fatal(err)
	}
	fr.Result.Stdout = b
	s.Commands[frKey] = fr

	// dmsetup table and status: the pool VG's lines per replica, one line
	// per VM disk.
	for _, which := range []string{"table", "status"} {
		key := findCmd(s, "dmsetup", which)
		c := s.Commands[key]
		lines := strings.Split(strings.TrimRight(string(c.Result.Stdout), "\n"), "\n")
		var out []string
		for _, l := range lines {
			out = append(out, l)
			if strings.HasPrefix(l, vg+"-") {
				for i := 1; i < benchVDOPools; i++ {
					out = append(out, renameVG(l, vg, fmt.Sprintf("%s%02d", vg, i), i))
				}
			}
			if strings.HasPrefix(l, disk.DMName+":") {
				for _, d := range dmDisk {
					out = append(out, d+l[len(disk.DMName):])
				}
			}
		}
		sort.Strings(out)
		c.Result.Stdout = []byte(strings.Join(out, "\n") + "\n")
		s.Commands[key] = c
	}
	// Per-pool stats message and on-disk geometry reads.
	for k, c := range base.Commands {
		if strings.Contains(k, "message "+vg+"-") {
			for i := 1; i < benchVDOPools; i++ {
				nc := c
				nc.Argv = append([]string(nil), c.Argv...)
				for j := range nc.Argv {
					nc.Argv[j] = renameVG(nc.Argv[j], vg, fmt.Sprintf("%s%02d", vg, i), i)
				}
				s.Commands[strings.Join(nc.Argv, " ")] = nc
			}
		}
	}
	for k, f := range base.Files {
		if strings.Contains(f.Path, "/dev/mapper/"+vg+"-") {
			for i := 1; i < benchVDOPools; i++ {
				nf := f
				nf.Path = renameVG(f.Path, vg, fmt.Sprintf("%s%02d", vg, i), i)
				s.Files[strings.Replace(k, f.Path, nf.Path, 1)] = nf
			}
		}
	}
	// bcache: bcache1..63 as copies of bcache0 with their own UUIDs.
	var bc *model.Bcache
	for _, b := range h.Bcache {
		bc = b
	}
	for k, f := range base.Files {
		if !strings.Contains(f.Path, "/"+bc.Device+"/") && !strings.HasSuffix(f.Path, "/"+bc.Device) {
			continue
		}
		for i := 1; i < benchBcache; i++ {
			dev := fmt.Sprintf("bcache%d", 1000+i)
			nf := f
			nf.Path = strings.ReplaceAll(f.Path, bc.Device, dev)
			nf.Data = []byte(strings.ReplaceAll(string(f.Data), bc.Device, dev))
			if strings.HasSuffix(f.Path, "/backing_dev_uuid") {
				nf.Data = []byte(fmt.Sprintf("%s%04d\n", bc.UUID[:len(bc.UUID)-4], i))
			}
			s.Files[strings.Replace(k, f.Path, nf.Path, 1)] = nf
		}
	}
	if d, ok := s.Files["dir/sys/block"]; ok {
		names := strings.Split(strings.TrimRight(string(d.Data), "\n"), "\n")
		for i := 1; i < benchBcache; i++ {
			names = append(names, fmt.Sprintf("bcache%d", 1000+i))
		}
		sort.Strings(names)
		d.Data = []byte(strings.Join(names, "\n") + "\n")
		s.Files["dir/sys/block"] = d
	}
	return synthHost{snap: s, desired: synthDesired(h, pool, bc), lvs: total}
}

// synthDesired declares every replicated pool with the article's settings
// and every bcache device with the article's tunables, as keel would after
// loading (defaults filled in).
func synthDesired(h *model.Host, pool *model.VDOPool, bc *model.Bcache) *spec.Config {
	c := &spec.Config{VolumeGroups: map[string]spec.VolumeGroup{}, Bcache: map[string]spec.Bcache{},
		Removal: spec.Removal{Mode: "zeroout", Step: "32M"}}
	lv := strings.TrimPrefix(pool.VDOLVs[0], pool.VG+"/")
	for i := 0; i < benchVDOPools; i++ {
		vg := pool.VG
		if i > 0 {
			vg = fmt.Sprintf("%s%02d", pool.VG, i)
		}
		c.VolumeGroups[vg] = spec.VolumeGroup{PVs: h.VGs[pool.VG].PVs, VDOPools: map[string]spec.VDOPool{
			pool.Name: {LV: lv, Size: units.NewSize("13G"), VirtualSize: units.NewSize("30G"), Overcommit: true,
				SlabSize: units.NewSize("2G"), IndexMemory: units.NewSize("256M"), Compression: true, Deduplication: true,
				MaxDiscard: units.NewSize("16M"), BlockMapCache: units.NewSize("128M"),
				Threads:          spec.Threads{Threads: vdo.ReferenceThreads},
				UsedPercentAlert: 90},
		}}
	}
	v := func(n int64) *int64 { return &n }
	for i := 0; i < benchBcache; i++ {
		uuid := bc.UUID
		if i > 0 {
			uuid = fmt.Sprintf("%s%04d", bc.UUID[:len(bc.UUID)-4], i)
		}
		c.Bcache[fmt.Sprintf("b%d", i)] = spec.Bcache{Backing: uuid, CacheMode: "writeback",
			SequentialCutoff: v(0), WritebackPercent: v(40), WritebackRateMinimum: v(20480)}
	}
	return c
}

func replaySnapshot(tb testing.TB, name string) *hostio.Snapshot {
	tb.Helper()
	s, err := hostio.ReadSnapshotFile(snapshotDir + "/" + name + ".txtar")
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// The synthetic host must come out of the real probe code as intended,
// or the benchmark measures something else.
func TestSynthHost(t *testing.T) {
	sh := makeSynthHost(t, 1000)
	h, err := probes.Probe(context.Background(), hostio.Replay(sh.snap))
	if err != nil {
		t.Fatal(err)
	}
	if len(h.LVs) != sh.lvs || len(h.VDOPools) != benchVDOPools || len(h.Bcache) != benchBcache {
		t.Fatalf("synthetic host: %d LVs (want %d), %d VDO pools, %d bcache", len(h.LVs), sh.lvs, len(h.VDOPools), len(h.Bcache))
	}
	for _, p := range h.VDOPools {
		if p.Table == nil || p.Status == nil || len(p.Regions) == 0 {
			t.Fatalf("pool %s lacks table, status or regions", p.LV)
		}
	}
	r := Plan(sh.desired, h)
	if len(r.Findings) == 0 {
		t.Fatal("no findings on the synthetic host")
	}
	checkInvariants(t, r)
}

func benchmarkProbePlan(b *testing.B, lvs int, probe bool) {
	sh := makeSynthHost(b, lvs)
	h, err := probes.Probe(context.Background(), hostio.Replay(sh.snap))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if probe {
			if h, err = probes.Probe(context.Background(), hostio.Replay(sh.snap)); err != nil {
				b.Fatal(err)
			}
		}
		Plan(sh.desired, h)
	}
}

// BenchmarkPlan is the planner alone over a host of 1,000 to 10,000 LVs with
// 64 VDO pools and 64 bcache devices (target: under 20 ms at 10,000 LVs).
func BenchmarkPlan(b *testing.B) {
	for _, n := range []int{1000, 2500, 5000, 10000} {
		b.Run(fmt.Sprintf("lvs=%d", n), func(b *testing.B) { benchmarkProbePlan(b, n, false) })
	}
}

// BenchmarkProbePlan is parsing the replayed probe pass plus planning.
func BenchmarkProbePlan(b *testing.B) {
	for _, n := range []int{1000, 2500, 5000, 10000} {
		b.Run(fmt.Sprintf("lvs=%d", n), func(b *testing.B) { benchmarkProbePlan(b, n, true) })
	}
}
