package vdo

import (
	"errors"
	"strings"
	"testing"
)

const gib = 1 << 30

// The measured layouts of storage-facts §1.3 (vdoformat 8.3.1.1, LVM
// defaults), the article's 40 GiB lab pool and the test guest's split pool
// (test-guest.md §6.2) before and after its growth steps.
func TestLayoutMeasured(t *testing.T) {
	tests := []struct {
		name                     string
		bytes                    uint64
		p                        uint64
		journalFirst, journalEnd uint64
		summaryFirst             uint64
		slabs                    uint64
		defaultLogical           uint64 // 0: not recorded
		unused                   uint64 // 0: not recorded
	}{
		{"5G", 5 * gib, 1310720, 1277888, 1310655, 1310656, 1, 523108, 0},
		{"10G", 10 * gib, 2621440, 2588608, 2621375, 2621376, 3, 1569686, 0},
		{"12G", 12 * gib, 3145728, 3112896, 3145663, 3145664, 4, 2092975, 0},
		{"100G", 100 * gib, 26214400, 26181568, 26214335, 26214336, 48, 25117680, 0},
		{"1T", 1024 * gib, 268435456, 268402624, 268435391, 268435392, 510, 266876728, 0},
		{"40G lab", 40 * gib, 10485760, 10452928, 10485695, 10485696, 18, 0, 336555},
		{"13G split", 3407872 * 4096, 3407872, 3375040, 3407807, 3407808, 5, 0, 0},
		{"17G split grown", 4456448 * 4096, 4456448, 4423616, 4456383, 4456384, 7, 0, 0},
		{"21.05G split grown", 5389 * 4 << 20, 5518336, 5485504, 5518271, 5518272, 0, 0, 0},
	}
	for _, tt := range tests {
		l, err := NewLayout(Geometry{PhysicalBytes: tt.bytes})
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if l.PhysicalBlocks != tt.p {
			t.Errorf("%s: P = %d, want %d", tt.name, l.PhysicalBlocks, tt.p)
		}
		if l.GeometryBlock != (Range{0, 0, 1}) || l.Index != (Range{1, 679127, 679127}) ||
			l.SuperBlock != (Range{679128, 679128, 1}) || l.BlockMapRoots != (Range{679129, 679188, 60}) ||
			l.DepotStart != 679189 {
			t.Errorf("%s: head = %+v %+v %+v %+v %d", tt.name, l.GeometryBlock, l.Index, l.SuperBlock, l.BlockMapRoots, l.DepotStart)
		}
		if l.RecoveryJournal != (Range{tt.journalFirst, tt.journalEnd, 32768}) {
			t.Errorf("%s: journal = %+v, want %d..%d", tt.name, l.RecoveryJournal, tt.journalFirst, tt.journalEnd)
		}
		if l.SlabSummary != (Range{tt.summaryFirst, tt.p - 1, 64}) {
			t.Errorf("%s: summary = %+v, want %d..%d", tt.name, l.SlabSummary, tt.summaryFirst, tt.p-1)
		}
		if tt.slabs != 0 && l.Slabs != tt.slabs {
			t.Errorf("%s: slabs = %d, want %d", tt.name, l.Slabs, tt.slabs)
		}
		if tt.defaultLogical != 0 && l.DefaultLogicalBlocks() != tt.defaultLogical {
			t.Errorf("%s: default logical = %d, want %d", tt.name, l.DefaultLogicalBlocks(), tt.defaultLogical)
		}
		if tt.unused != 0 && l.Unused.Count != tt.unused {
			t.Errorf("%s: unused = %d, want %d", tt.name, l.Unused.Count, tt.unused)
		}
		if l.Unused.Count >= l.Slab.Blocks {
			t.Errorf("%s: unused %d is a whole slab or more", tt.name, l.Unused.Count)
		}
		if l.Unused.Count > 0 && (l.Unused.First != l.DepotStart+l.Slabs*l.Slab.Blocks || l.Unused.Last+1 != l.RecoveryJournal.First) {
			t.Errorf("%s: unused %+v not between last slab and journal %d", tt.name, l.Unused, l.RecoveryJournal.First)
		}
	}
}

// Slab 0 and slab 4 of the test guest's 13 GiB split pool, from vdolistmetadata.
func TestSlabRangesMeasured(t *testing.T) {
	l, err := NewLayout(Geometry{PhysicalBytes: 3407872 * 4096})
	if err != nil {
		t.Fatal(err)
	}
	if got := l.SlabRange(0); got != (Range{679189, 1203476, 524288}) {
		t.Errorf("slab 0 = %+v", got)
	}
	if got := l.SlabRange(4); got != (Range{2776341, 3300628, 524288}) {
		t.Errorf("slab 4 = %+v", got)
	}
	// "1203123 .. 1203252: slab 0 reference blocks", "1203253 .. 1203476: slab 0 journal"
	s0 := l.SlabRange(0)
	refFirst := s0.First + l.Slab.DataBlocks
	if refFirst != 1203123 || refFirst+l.Slab.RefCountBlocks-1 != 1203252 || refFirst+l.Slab.RefCountBlocks != 1203253 {
		t.Errorf("slab 0 reference blocks start %d, %d blocks", refFirst, l.Slab.RefCountBlocks)
	}
}

func TestConfigureSlab(t *testing.T) {
	tests := []struct{ blocks, data, ref uint64 }{
		{1 << 19, 523934, 130}, // measured (storage-facts §1.3, test-guest §6.2)
		{1 << 15, 32535, 9},
		{1 << 13, 7966, 2},
		{1 << 23, 8386303, 2081}, // ceil(8388384/4032) = 2081
	}
	for _, tt := range tests {
		c, err := ConfigureSlab(tt.blocks)
		if err != nil {
			t.Fatal(err)
		}
		if c.DataBlocks != tt.data || c.RefCountBlocks != tt.ref || c.JournalBlocks != 224 ||
			c.DataBlocks+c.RefCountBlocks+c.JournalBlocks != tt.blocks {
			t.Errorf("ConfigureSlab(%d) = %+v, want data %d ref %d", tt.blocks, c, tt.data, tt.ref)
		}
	}
	if _, err := ConfigureSlab(224); err == nil {
		t.Error("ConfigureSlab(224): no error")
	}
	if _, err := ConfigureSlab(225); err == nil {
		t.Error("ConfigureSlab(225): no error")
	}
}

func TestCapacityLines(t *testing.T) {
	tests := []struct {
		bytes, slab uint64
		want        []string
	}{
		{40 * gib, 0, []string{
			"The VDO volume can address 36.00 GB in 18 data slabs, each 2.00 GB.",
			"It can grow to address at most 16.00 TB of physical storage in 8192 slabs.",
			"If a larger maximum size might be needed, use bigger slabs."}},
		{10 * gib, 0, []string{
			"The VDO volume can address 6.00 GB in 3 data slabs, each 2.00 GB.",
			"It can grow to address at most 16.00 TB of physical storage in 8192 slabs.",
			"If a larger maximum size might be needed, use bigger slabs."}},
		{13 * gib, 0, []string{
			"The VDO volume can address 10.00 GB in 5 data slabs, each 2.00 GB.",
			"It can grow to address at most 16.00 TB of physical storage in 8192 slabs.",
			"If a larger maximum size might be needed, use bigger slabs."}},
		{5 * gib, 0, []string{
			"The VDO volume can address 2.00 GB in 1 data slab.",
			"It can grow to address at most 16.00 TB of physical storage in 8192 slabs.",
			"If a larger maximum size might be needed, use bigger slabs."}},
		{3 * gib, 128 << 20, []string{
			"The VDO volume can address 256.00 MB in 2 data slabs, each 128.00 MB.",
			"It can grow to address at most 1.00 TB of physical storage in 8192 slabs.",
			"If a larger maximum size might be needed, use bigger slabs."}},
		{6 * 1024 * gib, 0, []string{
			"The VDO volume can address 6.00 TB in 3070 data slabs, each 2.00 GB.",
			"It can grow to address at most 16.00 TB of physical storage in 8192 slabs.",
			"If a larger maximum size might be needed, use bigger slabs."}},
	}
	// 32 GiB slabs are vdoformat's largest: no advice to use bigger ones.
	tests = append(tests, struct {
		bytes, slab uint64
		want        []string
	}{100 * gib, 32 * gib, []string{
		"The VDO volume can address 96.00 GB in 3 data slabs, each 32.00 GB.",
		"It can grow to address at most 256.00 TB of physical storage in 8192 slabs."}})
	for _, tt := range tests {
		l, err := NewLayout(Geometry{PhysicalBytes: tt.bytes, SlabBytes: tt.slab})
		if err != nil {
			t.Fatal(err)
		}
		got := l.CapacityLines()
		if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
			t.Errorf("%d bytes: got\n%s\nwant\n%s", tt.bytes, strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
		}
	}
}

func TestMinimum(t *testing.T) {
	m, err := MinimumBlocks(Geometry{})
	if err != nil || m != 1236309 {
		t.Errorf("MinimumBlocks(defaults) = %d, %v; want 1236309", m, err)
	}
	m, err = MinimumBlocks(Geometry{SlabBytes: 128 << 20})
	if err != nil || m != 744789 {
		t.Errorf("MinimumBlocks(128M slabs) = %d, %v; want 744789", m, err)
	}
	// Exactly the minimum: one slab, nothing unused.
	l, err := NewLayout(Geometry{PhysicalBytes: 1236309 * 4096})
	if err != nil || l.Slabs != 1 || l.Unused.Count != 0 {
		t.Errorf("minimum pool: %+v, %v", l, err)
	}
	_, err = NewLayout(Geometry{PhysicalBytes: 1236308 * 4096})
	if !errors.Is(err, ErrTooSmall) || !strings.Contains(err.Error(), "5063921664 bytes") {
		t.Errorf("one block below the minimum: %v", err)
	}
	_, err = NewLayout(Geometry{PhysicalBytes: 744788 * 4096, SlabBytes: 128 << 20})
	if !errors.Is(err, ErrTooSmall) || !strings.Contains(err.Error(), "3050655744 bytes") {
		t.Errorf("128M slabs below the minimum: %v", err)
	}
}

func TestLayoutErrors(t *testing.T) {
	for _, g := range []Geometry{
		{PhysicalBytes: 10 * gib, SlabBytes: 3 << 30},           // not a power of two
		{PhysicalBytes: 10 * gib, SlabBytes: 16 << 20},          // 12 bits
		{PhysicalBytes: 10 * gib, SlabBytes: 64 << 30},          // 24 bits
		{PhysicalBytes: 10 * gib, IndexMemory: IndexMemory{12}}, // 3 GiB: not measured
		{PhysicalBytes: 100 * gib, IndexMemory: IndexMemory{8}, Sparse: true},
		{PhysicalBytes: 257 << 40, SlabBytes: 32 << 30}, // above 256 TiB
		{PhysicalBytes: 17 << 40},                       // 8704 slabs of 2 GiB
	} {
		if l, err := NewLayout(g); err == nil {
			t.Errorf("NewLayout(%+v) = %d slabs, want an error", g, l.Slabs)
		}
	}
}

// Every slab count from 1 to 200 and each offset inside a slab: the
// remainder is below one slab and the regions tile the device.
func TestLayoutTiles(t *testing.T) {
	for _, slab := range []uint64{128 << 20, 2 << 30} {
		g := Geometry{SlabBytes: slab}
		min, _ := MinimumBlocks(g)
		s := slab / BlockSize
		for n := uint64(1); n <= 200; n++ {
			for _, off := range []uint64{0, 1, s / 2, s - 1} {
				g.PhysicalBytes = (min + (n-1)*s + off) * BlockSize
				l, err := NewLayout(g)
				if err != nil {
					t.Fatal(err)
				}
				if l.Slabs != n || l.Unused.Count != off {
					t.Fatalf("slab %d n=%d off=%d: got %d slabs, %d unused", slab, n, off, l.Slabs, l.Unused.Count)
				}
				total := 1 + l.Index.Count + 1 + 60 + l.Slabs*l.Slab.Blocks + l.Unused.Count + 32768 + 64
				if total != l.PhysicalBlocks {
					t.Fatalf("regions sum to %d, P = %d", total, l.PhysicalBlocks)
				}
				if l.ZeroWasteBlocks()+l.Unused.Count != l.PhysicalBlocks || l.NextSlabBlocks() != l.ZeroWasteBlocks()+s {
					t.Fatalf("zero-waste %d next %d", l.ZeroWasteBlocks(), l.NextSlabBlocks())
				}
			}
		}
	}
}

// "Logical blocks defaulted to N blocks" printed by vdoformat 8.3.1.1 through
// lvcreate in the test guest (e2e/vdo), for pools of 128 MiB slabs.
func TestDefaultLogical128M(t *testing.T) {
	for _, tt := range []struct{ bytes, slabs, want uint64 }{
		{2912 << 20, 1, 32315},
		{3 << 30, 2, 64810},
		{4832 << 20, 1, 0}, // 2 GiB slabs: 523108 as in the 5 GiB row
	} {
		g := Geometry{PhysicalBytes: tt.bytes, SlabBytes: 128 << 20}
		want := tt.want
		if want == 0 {
			g.SlabBytes, want = 0, 523108
		}
		l, err := NewLayout(g)
		if err != nil {
			t.Fatal(err)
		}
		if l.Slabs != tt.slabs || l.DefaultLogicalBlocks() != want {
			t.Errorf("%d bytes: %d slabs, default logical %d; want %d, %d", tt.bytes, l.Slabs, l.DefaultLogicalBlocks(), tt.slabs, want)
		}
	}
}
