package vdo

import (
	"reflect"
	"testing"
)

func TestThickLimitLab(t *testing.T) {
	l, err := NewLayout(Geometry{PhysicalBytes: 40 * gib})
	if err != nil {
		t.Fatal(err)
	}
	if l.DataBlocks() != 18*523934 {
		t.Fatalf("data blocks = %d", l.DataBlocks())
	}
	// The article: 35 GiB is what the pool holds thick, 36 GiB is not.
	if !l.FitsThick(VirtualBlocks(35 * gib)) {
		t.Error("35 GiB does not fit the 40 GiB pool")
	}
	if l.FitsThick(VirtualBlocks(36 * gib)) {
		t.Error("36 GiB fits the 40 GiB pool")
	}
	max := l.MaxThickLogicalBlocks()
	if !l.FitsThick(max) || l.FitsThick(max+1) {
		t.Errorf("MaxThickLogicalBlocks = %d is not the boundary", max)
	}
	v := l.MaxThickVirtualBytes(0)
	if v < 35*gib || v >= 36*gib || v%(4<<20) != 0 {
		t.Errorf("MaxThickVirtualBytes = %d", v)
	}
	if !l.FitsThick(VirtualBlocks(v)) || l.FitsThick(VirtualBlocks(v+4<<20)) {
		t.Errorf("MaxThickVirtualBytes = %d is not the extent boundary", v)
	}
}

func TestBlockMapPages(t *testing.T) {
	tests := []struct{ logical, interior, pages, forest uint64 }{
		{0, 180, 180, 180},
		{1, 180, 181, 180},
		{812, 180, 181, 181},
		{9175040, 180, 11300 + 180, 180 + 11300},
		// 60 roots x 812 leaves per level-0 page: one more level-0 page per root.
		{60 * 812 * 812, 180, 60*812 + 180, 180 + ceilDiv(60*812*812-180, 812)},
		{60*812*812 + 1, 240, 60*812 + 1 + 240, 240 + ceilDiv(60*812*812+1-240, 812)},
	}
	for _, tt := range tests {
		if got := InteriorPages(tt.logical); got != tt.interior {
			t.Errorf("InteriorPages(%d) = %d, want %d", tt.logical, got, tt.interior)
		}
		if got := BlockMapPages(tt.logical); got != tt.pages {
			t.Errorf("BlockMapPages(%d) = %d, want %d", tt.logical, got, tt.pages)
		}
		if got := ForestBlocks(tt.logical); got != tt.forest {
			t.Errorf("ForestBlocks(%d) = %d, want %d", tt.logical, got, tt.forest)
		}
	}
}

// Thick limits are monotone in the pool size and never exceed the data blocks.
func TestThickMonotone(t *testing.T) {
	prev := uint64(0)
	for g := uint64(5); g <= 2000; g += 7 {
		l, err := NewLayout(Geometry{PhysicalBytes: g * gib})
		if err != nil {
			t.Fatal(err)
		}
		m := l.MaxThickLogicalBlocks()
		if m < prev || m >= l.DataBlocks() || m < l.DefaultLogicalBlocks() {
			t.Fatalf("%d GiB: max thick %d, previous %d, data %d, default %d", g, m, prev, l.DataBlocks(), l.DefaultLogicalBlocks())
		}
		prev = m
	}
}

func TestVirtualBlocks(t *testing.T) {
	// Observed table line: -V 20G gives 41945088 sectors = 5243136 blocks.
	if got := VirtualBlocks(20 * gib); got != 41945088/8 {
		t.Errorf("VirtualBlocks(20G) = %d", got)
	}
}

func TestRAMBill(t *testing.T) {
	tests := []struct {
		phys, virt, cache, index uint64
		want                     RAM
		total                    uint64
	}{
		// Observed in the test guest: 449 MiB = 38 + 3 + 2 + 150 + 256.
		{10 * gib, 20 * gib, 128, 256, RAM{38, 150, 2, 3, 256}, 449},
		// The article's 40 GiB lab with -V 35G: 455 MiB without the logical term.
		{40 * gib, 35 * gib, 128, 256, RAM{38, 150, 2, 11, 256}, 457},
		{1 << 40, 1 << 40, 1024, 1024, RAM{38, 1177, 2, 268, 1024}, 2509},
		{1<<40 + 1, 10<<40 + 1, 130, 256, RAM{38, 150, 18, 269, 256}, 731},
		{0, 0, 0, 256, RAM{38, 150, 0, 0, 256}, 444},
		{256 << 40, 4 << 50, 16 << 20, 1 << 20, RAM{38, 19283968, 6552, 68608, 1 << 20}, 38 + 19283968 + 6552 + 68608 + 1<<20},
	}
	for _, tt := range tests {
		got := RAMBill(tt.phys, tt.virt, tt.cache, tt.index)
		if got != tt.want || got.TotalMiB() != tt.total {
			t.Errorf("RAMBill(%d, %d, %d, %d) = %+v (%d), want %+v (%d)", tt.phys, tt.virt, tt.cache, tt.index, got, got.TotalMiB(), tt.want, tt.total)
		}
	}
	// No overflow at the top of uint64.
	if got := RAMBill(^uint64(0), 0, 128, 256).PhysicalMiB; got != 268<<24 {
		t.Errorf("PhysicalMiB(max) = %d", got)
	}
}

func TestIndex(t *testing.T) {
	tests := []struct {
		mib           uint64
		str           string
		dense, sparse uint64
	}{
		{256, "0.25", 679127, 5822251},
		{300, "0.25", 679127, 5822251},
		{512, "0.50", 1366399, 11726359},
		{768, "0.75", 2053669, 17630467},
		{1024, "1", 2732747, 23452645},
		{2047, "1", 2732747, 23452645},
		{2048, "2", 5496229, 0},
		{4096, "4", 11058007, 0},
		{3072, "3", 0, 0},
	}
	for _, tt := range tests {
		m, err := IndexMemoryFromMiB(tt.mib)
		if err != nil || m.String() != tt.str {
			t.Errorf("IndexMemoryFromMiB(%d) = %s, %v; want %s", tt.mib, m, err, tt.str)
			continue
		}
		for _, c := range []struct {
			sparse bool
			want   uint64
		}{{false, tt.dense}, {true, tt.sparse}} {
			got, err := IndexBlocks(m, c.sparse)
			if c.want == 0 {
				if err == nil {
					t.Errorf("IndexBlocks(%s, %v) = %d, want an error", m, c.sparse, got)
				}
			} else if err != nil || got != c.want {
				t.Errorf("IndexBlocks(%s, %v) = %d, %v; want %d", m, c.sparse, got, err, c.want)
			}
		}
	}
	if _, err := IndexMemoryFromMiB(255); err == nil {
		t.Error("255 MiB accepted")
	}
	if _, err := IndexMemoryFromBytes(256<<20 + 1); err == nil {
		t.Error("256 MiB + 1 byte accepted")
	}
	if w := DedupeWindowBytes(IndexMemory{1}, false); w != 256*gib {
		t.Errorf("dense 0.25 window = %d", w)
	}
	if w := DedupeWindowBytes(IndexMemory{4}, true); w != 10<<40 {
		t.Errorf("sparse 1 GiB window = %d", w)
	}
}

func TestAutoThreadsReference(t *testing.T) {
	if got := AutoThreads(16, 18); got != ReferenceThreads {
		t.Errorf("AutoThreads(16, 18) = %+v, want %+v", got, ReferenceThreads)
	}
	tests := []struct {
		cpus  int
		slabs uint64
		want  Threads
	}{
		{1, 18, Threads{CPU: 1, Bio: 1}},
		{2, 18, Threads{CPU: 1, Bio: 1}},
		{3, 18, Threads{CPU: 1, Bio: 1, Ack: 1}},
		{4, 18, Threads{CPU: 2, Bio: 1, Ack: 1}},
		{5, 18, Threads{1, 1, 1, 1, 1, 0}},
		{8, 18, Threads{2, 2, 1, 2, 1, 0}},
		{16, 1, Threads{5, 1, 3, 4, 2, 1}},
		{32, 18, Threads{8, 8, 4, 6, 4, 2}},
		{64, 18, Threads{8, 16, 10, 14, 10, 6}},
		{64, 3, Threads{8, 3, 14, 17, 13, 9}},
	}
	for _, tt := range tests {
		if got := AutoThreads(tt.cpus, tt.slabs); got != tt.want {
			t.Errorf("AutoThreads(%d, %d) = %+v, want %+v", tt.cpus, tt.slabs, got, tt.want)
		}
	}
}

// For every CPU count 1..128 and several slab counts and caches: the layout
// is valid, sums to the CPU count from 2 CPUs on, and no type is further
// from its share than the limits force.
func TestAutoThreadsRange(t *testing.T) {
	for _, cache := range []uint64{32768, 262144, 1 << 22} {
		for _, slabs := range []uint64{1, 2, 3, 4, 16, 18, 8192} {
			for cpus := 1; cpus <= 128; cpus++ {
				th := AutoThreadsCache(cpus, slabs, cache)
				if err := th.Validate(slabs, cache); err != nil {
					t.Fatalf("cpus=%d slabs=%d cache=%d: %+v: %v", cpus, slabs, cache, th, err)
				}
				if cpus >= 2 && th.Total() != cpus {
					t.Fatalf("cpus=%d slabs=%d cache=%d: %+v sums to %d", cpus, slabs, cache, th, th.Total())
				}
				if cpus == 1 && th.Total() != 2 {
					t.Fatalf("cpus=1: %+v", th)
				}
				if cpus >= 5 {
					// No type is below its whole share unless it is at its limit.
					caps := [6]int{int(min(cache/4096, 60)), int(min(slabs, 16)), 100, 100, 100, 100}
					got := [6]int{th.Logical, th.Physical, th.Hash, th.CPU, th.Bio, th.Ack}
					for i, w := range threadWeights {
						if got[i] < w*cpus/16 && got[i] != caps[i] {
							t.Fatalf("cpus=%d slabs=%d cache=%d: %+v: type %d below its share %d", cpus, slabs, cache, th, i, w*cpus/16)
						}
					}
				}
			}
		}
	}
	// Beyond the sum of the limits the layout saturates but stays valid.
	th := AutoThreadsCache(1000, 8192, 1<<22)
	if th != (Threads{60, 16, 100, 100, 100, 100}) {
		t.Errorf("AutoThreadsCache(1000) = %+v", th)
	}
}

func TestValidateThreads(t *testing.T) {
	bad := []Threads{
		{Logical: 1, Physical: 0, Hash: 1, CPU: 1, Bio: 1},
		{Logical: 61, Physical: 1, Hash: 1, CPU: 1, Bio: 1},
		{Logical: 1, Physical: 17, Hash: 1, CPU: 1, Bio: 1},
		{Logical: 1, Physical: 1, Hash: 1, CPU: 0, Bio: 1},
		{Logical: 1, Physical: 1, Hash: 1, CPU: 1, Bio: 0},
		{Logical: 1, Physical: 1, Hash: 1, CPU: 1, Bio: 1, Ack: 101},
		{Logical: 1, Physical: 4, Hash: 1, CPU: 1, Bio: 1}, // 3 slabs
		{Logical: 9, Physical: 1, Hash: 1, CPU: 1, Bio: 1}, // 128 MiB cache
	}
	for _, th := range bad {
		if err := th.Validate(3, 32768); err == nil {
			t.Errorf("Validate(%+v) = nil", th)
		}
	}
	if err := LVMDefaultThreads.Validate(3, 32768); err != nil {
		t.Errorf("LVM defaults: %v", err)
	}
}

func TestJournalExtents(t *testing.T) {
	// The 40 GiB lab: journal from block 10452928 = LE 10207 + 3.75 MiB.
	if got := JournalExtents(10485760, 1024); got != (Extents{10207, 10239, 33}) {
		t.Errorf("JournalExtents(40G) = %+v", got)
	}
	// Guest split pool: P = 3407872, tail on NVMe from LE 3072; journal LE 3295..3327.
	if got := JournalExtents(3407872, 1024); got != (Extents{3295, 3327, 33}) {
		t.Errorf("JournalExtents(13G) = %+v", got)
	}
	// 21.05 GiB (5389 extents): journal 5485504.. is LE 5356.
	if got := JournalExtents(5518336, 1024); got != (Extents{5356, 5388, 33}) {
		t.Errorf("JournalExtents(5389 extents) = %+v", got)
	}
}

func TestSplit(t *testing.T) {
	l, _ := NewLayout(Geometry{PhysicalBytes: 40 * gib})
	s, err := l.Split(0)
	if err != nil {
		t.Fatal(err)
	}
	// Head covers blocks 0..679188 (the article put 768 extents there).
	want := SplitPlan{ExtentBytes: 4 << 20, ExtentBlocks: 1024, TotalExtents: 10240,
		Head: Extents{0, 663, 664}, Middle: Extents{664, 10206, 9543}, Tail: Extents{10207, 10239, 33}}
	if s != want {
		t.Errorf("Split = %+v, want %+v", s, want)
	}
	if s.Head.Count*1024 < l.DepotStart || (s.Head.Count-1)*1024 >= l.DepotStart {
		t.Errorf("head %d extents does not just cover %d blocks", s.Head.Count, l.DepotStart)
	}
	if _, err := l.Split(3 << 20); err == nil {
		t.Error("40 GiB split in 3 MiB extents: no error")
	}
	small, _ := NewLayout(Geometry{PhysicalBytes: 1236992 * 4096}) // minimum rounded to 4 MiB
	if sp, err := small.Split(0); err != nil || sp.Middle.Count == 0 {
		t.Errorf("minimum pool split: %+v, %v", sp, err)
	}
}

func TestPlanSplitGrow(t *testing.T) {
	l, _ := NewLayout(Geometry{PhysicalBytes: 40 * gib})
	tests := []struct {
		grow  uint64
		steps []GrowStep
	}{
		// +256 MiB: LVM raises it to one slab, on the fast PV.
		{256 << 20, []GrowStep{{true, 512, 2 * gib}}},
		{2 * gib, []GrowStep{{true, 512, 2 * gib}}},
		// +3 GiB: the slow step would be 1 GiB, below one slab: raised to 2 GiB.
		{3 * gib, []GrowStep{{false, 512, 2 * gib}, {true, 512, 2 * gib}}},
		{10 * gib, []GrowStep{{false, 2048, 8 * gib}, {true, 512, 2 * gib}}},
		{10*gib + 1, []GrowStep{{false, 2049, 8*gib + 4<<20}, {true, 512, 2 * gib}}},
	}
	for _, tt := range tests {
		p, err := l.PlanSplitGrow(tt.grow, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(p.Steps, tt.steps) {
			t.Errorf("grow %d: steps %+v, want %+v", tt.grow, p.Steps, tt.steps)
		}
		if p.AddedBytes < tt.grow {
			t.Errorf("grow %d: adds only %d", tt.grow, p.AddedBytes)
		}
		// The journal ends inside the last (fast) step, and every step adds a slab.
		n := p.After.PhysicalBlocks / 1024
		if p.Tail.First < n-p.Steps[len(p.Steps)-1].Extents || p.Tail.Last != n-1 {
			t.Errorf("grow %d: tail %+v outside the fast step", tt.grow, p.Tail)
		}
		if p.After.Slabs < l.Slabs+uint64(len(p.Steps)) {
			t.Errorf("grow %d: %d slabs after, from %d", tt.grow, p.After.Slabs, l.Slabs)
		}
	}
	// 128 MiB slabs: the minimum step is 132 MiB (128 MiB + 256 KiB in extents), 33 extents,
	// exactly the journal's extents.
	s, _ := NewLayout(Geometry{PhysicalBytes: 3 * gib, SlabBytes: 128 << 20})
	p, err := s.PlanSplitGrow(1, 0)
	if err != nil || p.MinStepBytes != 132<<20 || len(p.Steps) != 1 || p.Tail.Count != 33 || p.Tail.First != p.After.PhysicalBlocks/1024-33 {
		t.Errorf("128M slabs grow: %+v, %v", p, err)
	}
	if _, err := l.PlanSplitGrow(0, 0); err == nil {
		t.Error("grow by 0: no error")
	}
	// Guest observation: +256 MiB became 2 GiB.
	if MinGrowBytes(2*gib, 4<<20) != 2*gib {
		t.Error("MinGrowBytes(2G slabs)")
	}
}

func TestLVCreateArgs(t *testing.T) {
	p := Pool{
		VG: "vdolab", Pool: "vdopool", LV: "vdolv",
		PhysicalBytes: 40 * gib, VirtualBytes: 35 * gib,
		MaxDiscardBlocks: 4096, Compression: true, Deduplication: true,
		Threads: ReferenceThreads,
		PVs:     []string{"/dev/nvme8n1"},
	}
	want := []string{"lvcreate", "-y", "--type", "vdo", "-L", "40G", "-V", "35G", "-n", "vdolv", "vdolab/vdopool", "/dev/nvme8n1",
		"--vdosettings", "slab_size_mb=2048 index_memory_size_mb=256 use_sparse_index=0 block_map_cache_size_mb=128 max_discard=4096 " +
			"logical_threads=4 physical_threads=4 hash_zone_threads=2 cpu_threads=3 bio_threads=2 ack_threads=1 use_compression=1 use_deduplication=1"}
	if got := p.LVCreateArgs(); !reflect.DeepEqual(got, want) {
		t.Errorf("LVCreateArgs =\n%q\nwant\n%q", got, want)
	}
	g, err := p.Geometry()
	if err != nil || g.IndexMemory != (IndexMemory{1}) || g.SlabBytes != 2*gib {
		t.Errorf("Geometry = %+v, %v", g, err)
	}
	for n, s := range map[uint64]string{40 * gib: "40G", 132 << 20: "132M", 5063921664: "4945236K", 1: "1b", 0: "0b", 3 << 40: "3T"} {
		if got := LVMSize(n); got != s {
			t.Errorf("LVMSize(%d) = %q, want %q", n, got, s)
		}
	}
}

func TestSplitArgs(t *testing.T) {
	l, _ := NewLayout(Geometry{PhysicalBytes: 40 * gib})
	s, _ := l.Split(0)
	p := Pool{VG: "vdolab", Pool: "splitpool", LV: "splitlv", PhysicalBytes: 40 * gib, VirtualBytes: 35 * gib, Threads: LVMDefaultThreads}
	got := p.SplitCreateArgs(s, []string{"/dev/fast"}, []string{"/dev/slow"})
	want := [][]string{
		{"lvcreate", "-y", "-l", "664", "-n", "splitpool", "vdolab", "/dev/fast"},
		{"lvextend", "-l", "+9543", "vdolab/splitpool", "/dev/slow"},
		{"lvextend", "-l", "+33", "vdolab/splitpool", "/dev/fast"},
		{"lvconvert", "-y", "--type", "vdo-pool", "-n", "splitlv", "-V", "35G", "vdolab/splitpool", "--vdosettings", p.VDOSettings()},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("SplitCreateArgs =\n%q\nwant\n%q", got, want)
	}
	g, _ := l.PlanSplitGrow(10*gib, 0)
	gotG := p.GrowArgs(g, []string{"/dev/fast"}, []string{"/dev/slow"})
	wantG := [][]string{
		{"lvextend", "-l", "+2048", "vdolab/splitpool", "/dev/slow"},
		{"lvextend", "-l", "+512", "vdolab/splitpool", "/dev/fast"},
	}
	if !reflect.DeepEqual(gotG, wantG) {
		t.Errorf("GrowArgs = %q, want %q", gotG, wantG)
	}
}

// Without a virtual size the lines leave -V out, so vdoformat picks its default.
func TestArgsWithoutVirtual(t *testing.T) {
	p := Pool{VG: "vg0", Pool: "p", LV: "lv", PhysicalBytes: 12 * gib, Threads: LVMDefaultThreads}
	for _, argv := range [][]string{p.LVCreateArgs(), p.ConvertArgs()} {
		for _, a := range argv {
			if a == "-V" {
				t.Errorf("%q has -V", argv)
			}
		}
	}
	if got := p.LVCreateArgs()[:7]; !reflect.DeepEqual(got, []string{"lvcreate", "-y", "--type", "vdo", "-L", "12G", "-n"}) {
		t.Errorf("LVCreateArgs = %q", got)
	}
}
