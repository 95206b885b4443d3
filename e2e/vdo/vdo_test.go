//go:build e2e

package vdo_test

import (
	"bufio"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/keel-storage/keel/e2e/guest"
	"github.com/keel-storage/keel/lvm/vdo"
)

const mib = 1 << 20

// pool is one lvcreate in the scenario.
type pool struct {
	name    string
	size    uint64 // -L, a whole number of 4 MiB extents
	virtual uint64 // -V; 0: vdoformat's default
	slab    uint64
	threads vdo.Threads
	// tooSmall: lvcreate must fail with vdoformat's minimum in bytes.
	tooSmall bool
}

var pools = []pool{
	{name: "minbelow", size: 4828 * mib, threads: vdo.LVMDefaultThreads, tooSmall: true}, // 1207 extents < 1236309 blocks
	{name: "min2g", size: 4832 * mib, threads: vdo.AutoThreads(2, 1)},                    // 1208 extents: the smallest 2 GiB-slab pool LVM can make
	{name: "p10g", size: 10 << 30, virtual: 20 << 30, threads: vdo.LVMDefaultThreads},
	{name: "p12g", size: 12 << 30, threads: vdo.AutoThreads(5, 4)},
	{name: "p40g", size: 40 << 30, virtual: 35 << 30, threads: vdo.ReferenceThreads},
	{name: "p100g", size: 100 << 30, threads: vdo.AutoThreads(8, 48)},
	{name: "s128below", size: 2908 * mib, slab: 128 * mib, threads: vdo.LVMDefaultThreads, tooSmall: true}, // 727 extents < 744789 blocks
	{name: "s128min", size: 2912 * mib, slab: 128 * mib, threads: vdo.AutoThreads(3, 1)},
	{name: "s128", size: 3 << 30, slab: 128 * mib, threads: vdo.AutoThreads(5, 2)},
}

func (p pool) spec() vdo.Pool {
	return vdo.Pool{VG: "vg0", Pool: p.name, LV: p.name + "lv", PhysicalBytes: p.size, VirtualBytes: p.virtual,
		SlabBytes: p.slab, MaxDiscardBlocks: 4096, Compression: true, Deduplication: true, Threads: p.threads}
}

// The split pool: 20 GiB, head and tail on the NVMe, slabs on the HDD, then
// grown by 4 GiB with keel's two-step plan.
var splitPool = vdo.Pool{VG: "vg1", Pool: "split", LV: "splitlv", PhysicalBytes: 20 << 30, VirtualBytes: 10 << 30,
	Compression: true, Deduplication: true, Threads: vdo.AutoThreads(4, 8)}

const splitGrow = 4 << 30

func quote(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}

func scenario(t *testing.T) string {
	var b strings.Builder
	b.WriteString(`set -u
versions
big=$(disk big) || exit 10
fast=$(disk nvme0) || exit 10
slow=$(disk hdd1) || exit 10
step pvcreate -y "$big" "$fast" "$slow" || exit 11
step vgcreate vg0 "$big" || exit 11
step vgcreate vg1 "$fast" "$slow" || exit 11
# record NAME VG POOL: what LVM and dm-vdo made of the pool
record() {
	local o=$OUT/$1
	lvs -a --noheadings --units b --nosuffix --separator ' ' -o lv_name,lv_size,seg_start_pe,seg_size_pe,devices "$2" > "$o/lvs.txt" 2>&1
	dmsetup table "$2-$3-vpool" > "$o/table.txt" 2>&1
	vdolistmetadata "/dev/mapper/$2-$3_vdata" > "$o/metadata.txt" 2>&1
}
`)
	for _, p := range pools {
		fmt.Fprintf(&b, "mkdir -p $OUT/%s\necho '== %s'\n", p.name, p.name)
		fmt.Fprintf(&b, "%s > $OUT/%s/lvcreate.txt 2>&1; echo $? > $OUT/%s/rc\ncat $OUT/%s/lvcreate.txt\n",
			quote(p.spec().LVCreateArgs()), p.name, p.name, p.name)
		fmt.Fprintf(&b, "if [ \"$(cat $OUT/%s/rc)\" = 0 ]; then record %s vg0 %s; step lvremove -y -f vg0 || exit 12; fi\n", p.name, p.name, p.name)
	}
	_, s, g := splitPlans(t)
	b.WriteString("mkdir -p $OUT/split $OUT/splitgrow\necho '== split'\n")
	for _, argv := range splitPool.SplitCreateArgs(s, []string{"$fast"}, []string{"$slow"}) {
		fmt.Fprintf(&b, "step %s >> $OUT/split/lvcreate.txt 2>&1 || { cat $OUT/split/lvcreate.txt; exit 13; }\n", quoteVars(argv))
	}
	b.WriteString("cat $OUT/split/lvcreate.txt\nrecord split vg1 split\necho '== split grow'\n")
	for _, argv := range splitPool.GrowArgs(g, []string{"$fast"}, []string{"$slow"}) {
		fmt.Fprintf(&b, "step %s >> $OUT/splitgrow/lvextend.txt 2>&1 || { cat $OUT/splitgrow/lvextend.txt; exit 14; }\n", quoteVars(argv))
	}
	b.WriteString("cat $OUT/splitgrow/lvextend.txt\nrecord splitgrow vg1 split\nreadlink -f \"$fast\" > $OUT/fastdev\nreadlink -f \"$slow\" > $OUT/slowdev\n")
	b.WriteString("step lvremove -y -f vg1\nexit 0\n")
	return b.String()
}

// quoteVars quotes argv but leaves $fast and $slow for the shell to expand.
func quoteVars(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a == "$fast" || a == "$slow" {
			out[i] = `"` + a + `"`
		} else {
			out[i] = quote([]string{a})
		}
	}
	return strings.Join(out, " ")
}

func splitPlans(t *testing.T) (vdo.Layout, vdo.SplitPlan, vdo.GrowPlan) {
	geo, err := splitPool.Geometry()
	if err != nil {
		t.Fatal(err)
	}
	l, err := vdo.NewLayout(geo)
	if err != nil {
		t.Fatal(err)
	}
	s, err := l.Split(0)
	if err != nil {
		t.Fatal(err)
	}
	g, err := l.PlanSplitGrow(splitGrow, 0)
	if err != nil {
		t.Fatal(err)
	}
	return l, s, g
}

func TestVDOArithmeticOnRealPools(t *testing.T) {
	r := guest.Run(t, guest.Spec{
		Disks: []guest.Disk{
			{Kind: guest.Virtio, Size: "120G", Serial: "big"},
			{Kind: guest.NVMe, Size: "20G", Serial: "nvme0"},
			{Kind: guest.HDD, Size: "40G", Serial: "hdd1"},
		},
		Script:  scenario(t),
		Timeout: 10 * time.Minute,
	})
	r.RequireOK(t)

	for _, p := range pools {
		t.Run(p.name, func(t *testing.T) {
			rc := strings.TrimSpace(file(t, r, p.name+"/rc"))
			out := file(t, r, p.name+"/lvcreate.txt")
			geo, err := p.spec().Geometry()
			if err != nil {
				t.Fatal(err)
			}
			min, err := vdo.MinimumBlocks(geo)
			if err != nil {
				t.Fatal(err)
			}
			l, lerr := vdo.NewLayout(geo)
			if p.tooSmall {
				if lerr == nil {
					t.Fatalf("keel accepts a %d-byte pool that the test expects vdoformat to refuse", p.size)
				}
				want := fmt.Sprintf("Minimum required size for VDO volume: %d bytes", min*vdo.BlockSize)
				if rc == "0" || !strings.Contains(out, want) {
					t.Fatalf("lvcreate rc %s, want failure with %q:\n%s", rc, want, out)
				}
				return
			}
			if lerr != nil {
				t.Fatal(lerr)
			}
			if rc != "0" {
				t.Fatalf("lvcreate rc %s:\n%s", rc, out)
			}
			checkCapacity(t, l, out)
			checkTable(t, l, p.virtual, file(t, r, p.name+"/table.txt"))
			checkMetadata(t, l, file(t, r, p.name+"/metadata.txt"))
		})
	}

	t.Run("split", func(t *testing.T) {
		l, s, g := splitPlans(t)
		fast := strings.TrimSpace(file(t, r, "fastdev"))
		slow := strings.TrimSpace(file(t, r, "slowdev"))
		checkCapacity(t, l, file(t, r, "split/lvcreate.txt"))
		checkMetadata(t, l, file(t, r, "split/metadata.txt"))
		segs := segments(t, file(t, r, "split/lvs.txt"), "split_vdata")
		for _, c := range []struct {
			name string
			ext  vdo.Extents
			dev  string
		}{{"head", s.Head, fast}, {"middle", s.Middle, slow}, {"tail", s.Tail, fast}} {
			for le := c.ext.First; le <= c.ext.Last; le += max(1, c.ext.Count-1) {
				if got := devAt(segs, le); got != c.dev {
					t.Errorf("split %s LE %d on %q, want %q", c.name, le, got, c.dev)
				}
			}
		}

		checkMetadata(t, g.After, file(t, r, "splitgrow/metadata.txt"))
		segs = segments(t, file(t, r, "splitgrow/lvs.txt"), "split_vdata")
		for le := g.Tail.First; le <= g.Tail.Last; le++ {
			if got := devAt(segs, le); got != fast {
				t.Errorf("after the grow, journal LE %d is on %q, want the fast PV %q", le, got, fast)
			}
		}
		if !strings.Contains(file(t, r, "splitgrow/lvextend.txt"), "successfully resized") {
			t.Errorf("lvextend output:\n%s", file(t, r, "splitgrow/lvextend.txt"))
		}
	})
}

func file(t *testing.T, r *guest.Result, name string) string {
	t.Helper()
	b, err := r.File(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkCapacity compares vdoformat's capacity lines (relayed by LVM) with keel's.
func checkCapacity(t *testing.T, l vdo.Layout, out string) {
	t.Helper()
	var got []string
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "The VDO volume can address") || strings.HasPrefix(line, "It can grow to address") ||
			strings.HasPrefix(line, "If a larger maximum size") || strings.HasPrefix(line, "The volume has the maximum") ||
			strings.HasPrefix(line, "Consider using larger slabs") {
			got = append(got, line)
		}
	}
	want := l.CapacityLines()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("vdoformat printed\n%s\nkeel computes\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// checkTable compares the -vpool table line's storage size (4K blocks) and
// logical size with keel's physical blocks and, without -V, vdoformat's
// default logical size.
func checkTable(t *testing.T, l vdo.Layout, virtual uint64, table string) {
	t.Helper()
	f := strings.Fields(table)
	if len(f) < 7 || f[3] != "V4" {
		t.Fatalf("table line: %q", table)
	}
	sectors, _ := strconv.ParseUint(f[1], 10, 64)
	phys, _ := strconv.ParseUint(f[5], 10, 64)
	if phys != l.PhysicalBlocks {
		t.Errorf("table storage size %d blocks, keel %d", phys, l.PhysicalBlocks)
	}
	wantLogical := l.DefaultLogicalBlocks()
	if virtual != 0 {
		wantLogical = vdo.VirtualBlocks(virtual)
	}
	if sectors != wantLogical*8 {
		t.Errorf("table logical size %d sectors (%d blocks), keel %d blocks", sectors, sectors/8, wantLogical)
	}
}

var metaLine = regexp.MustCompile(`^(\d+) \.\. (\d+): (.*)$`)

// checkMetadata compares vdolistmetadata's ranges with keel's layout.
func checkMetadata(t *testing.T, l vdo.Layout, listing string) {
	t.Helper()
	got := map[string]vdo.Range{}
	sc := bufio.NewScanner(strings.NewReader(listing))
	for sc.Scan() {
		m := metaLine.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		a, _ := strconv.ParseUint(m[1], 10, 64)
		z, _ := strconv.ParseUint(m[2], 10, 64)
		got[m[3]] = vdo.Range{First: a, Last: z, Count: z - a + 1}
	}
	if len(got) == 0 {
		t.Fatalf("no ranges in vdolistmetadata output:\n%s", listing)
	}
	want := map[string]vdo.Range{
		"geometry block":       l.GeometryBlock,
		"index":                l.Index,
		"super block":          l.SuperBlock,
		"block map tree roots": l.BlockMapRoots,
		"recovery journal":     l.RecoveryJournal,
		"slab summary":         l.SlabSummary,
	}
	for k := uint64(0); k < l.Slabs; k++ {
		s := l.SlabRange(k)
		ref := s.First + l.Slab.DataBlocks
		want[fmt.Sprintf("slab %d reference blocks", k)] = vdo.Range{First: ref, Last: ref + l.Slab.RefCountBlocks - 1, Count: l.Slab.RefCountBlocks}
		want[fmt.Sprintf("slab %d journal", k)] = vdo.Range{First: s.Last - l.Slab.JournalBlocks + 1, Last: s.Last, Count: l.Slab.JournalBlocks}
	}
	for name, w := range want {
		if g, ok := got[name]; !ok || g != w {
			t.Errorf("%s: vdolistmetadata %+v (listed %v), keel %+v", name, g, ok, w)
		}
	}
	if _, extra := got[fmt.Sprintf("slab %d journal", l.Slabs)]; extra {
		t.Errorf("vdolistmetadata lists more than keel's %d slabs", l.Slabs)
	}
}

type segment struct {
	start, size uint64
	dev         string
}

// segments parses `lvs -a -o lv_name,lv_size,seg_start_pe,seg_size_pe,devices` lines of one LV.
func segments(t *testing.T, lvs, lv string) []segment {
	t.Helper()
	var out []segment
	for _, line := range strings.Split(lvs, "\n") {
		f := strings.Fields(line)
		if len(f) != 5 || strings.Trim(f[0], "[]") != lv {
			continue
		}
		start, _ := strconv.ParseUint(f[2], 10, 64)
		size, _ := strconv.ParseUint(f[3], 10, 64)
		dev, _, _ := strings.Cut(f[4], "(")
		out = append(out, segment{start, size, dev})
	}
	if len(out) == 0 {
		t.Fatalf("no segments of %s in:\n%s", lv, lvs)
	}
	return out
}

func devAt(segs []segment, le uint64) string {
	for _, s := range segs {
		if le >= s.start && le < s.start+s.size {
			return s.dev
		}
	}
	return ""
}
