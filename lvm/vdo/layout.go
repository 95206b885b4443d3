package vdo

import (
	"errors"
	"fmt"
	"math/bits"

	"github.com/keel-storage/keel/lvm/units"
)

// ErrTooSmall is wrapped by the error Layout returns for a pool with room for
// no slab; the error also gives the minimum size.
var ErrTooSmall = errors.New("pool too small")

// ErrTooManySlabs is wrapped by NewLayout's error for a pool that needs
// more than MaxSlabs slabs of the geometry's slab size.
var ErrTooManySlabs = errors.New("too many slabs: use bigger slabs")

// Geometry is what a pool is formatted with. Zero fields take LVM's defaults.
type Geometry struct {
	// PhysicalBytes is the size of the pool's data LV (lvcreate -L).
	PhysicalBytes uint64
	// SlabBytes is the slab size: a power of two from 32 MiB to 32 GiB
	// (slab bits 13..23); LVM accepts 128 MiB .. 32 GiB. Default 2 GiB.
	SlabBytes uint64
	// IndexMemory is the UDS index memory setting. Default 0.25 (256 MiB).
	IndexMemory IndexMemory
	// Sparse selects a sparse UDS index.
	Sparse bool
}

// Range is an inclusive range of blocks; Count is Last-First+1, 0 if empty.
type Range struct {
	First uint64 `json:"first"`
	Last  uint64 `json:"last"`
	Count uint64 `json:"count"`
}

func span(first, count uint64) Range {
	if count == 0 {
		return Range{First: first}
	}
	return Range{First: first, Last: first + count - 1, Count: count}
}

// SlabConfig is the inside of one slab (vdo_configure_slab in encodings.c):
// data blocks first, then reference-count blocks, then the slab journal.
type SlabConfig struct {
	Blocks         uint64 `json:"blocks"`
	DataBlocks     uint64 `json:"dataBlocks"`
	RefCountBlocks uint64 `json:"refCountBlocks"`
	JournalBlocks  uint64 `json:"journalBlocks"`
}

// ConfigureSlab computes a slab's inside as vdo_configure_slab does: the
// reference counts cover slab minus journal blocks at RefCountsPerBlock per
// block (a one-step approximation VDO also makes), the rest is data. For
// 2^19 blocks: 523934 data, 130 reference-count, 224 journal.
func ConfigureSlab(slabBlocks uint64) (SlabConfig, error) {
	if slabBlocks <= SlabJournalBlocks {
		return SlabConfig{}, fmt.Errorf("slab of %d blocks: not larger than its %d-block journal", slabBlocks, SlabJournalBlocks)
	}
	ref := ceilDiv(slabBlocks-SlabJournalBlocks, RefCountsPerBlock)
	meta := ref + SlabJournalBlocks
	if meta >= slabBlocks {
		return SlabConfig{}, fmt.Errorf("slab of %d blocks: no room for data after %d metadata blocks", slabBlocks, meta)
	}
	return SlabConfig{Blocks: slabBlocks, DataBlocks: slabBlocks - meta, RefCountBlocks: ref, JournalBlocks: SlabJournalBlocks}, nil
}

// Layout is where vdoformat puts everything on a pool's data LV
// (vdo_initialize_layout in encodings.c, initializeVolumeGeometry and
// configureVDO in vdoConfig.c): the geometry block and the UDS index at the
// start, then the super block and the block-map roots, then whole slabs;
// the slab summary is carved from the end and the recovery journal just
// before it, so blocks between the last slab and the journal are unused.
type Layout struct {
	Geometry Geometry `json:"-"`
	// PhysicalBlocks is P, the data LV size in blocks (rounded down).
	PhysicalBlocks uint64 `json:"physicalBlocks"`
	// SlabBits is log2 of the slab size in blocks (vdoformat --slab-bits).
	SlabBits uint `json:"slabBits"`
	// GeometryBlock is block 0.
	GeometryBlock Range `json:"geometryBlock"`
	// Index is the UDS index, blocks 1..I.
	Index Range `json:"index"`
	// SuperBlock is D = I+1 (the data region's start in the geometry block).
	SuperBlock Range `json:"superBlock"`
	// BlockMapRoots are the 60 tree roots after the super block.
	BlockMapRoots Range `json:"blockMapRoots"`
	// DepotStart is the first block of slab 0 (D+61).
	DepotStart uint64 `json:"depotStart"`
	// Slab is the inside of every slab.
	Slab SlabConfig `json:"slab"`
	// Slabs is the number of whole slabs: floor(depot blocks / slab blocks).
	Slabs uint64 `json:"slabs"`
	// Unused is the remainder between the last slab and the recovery journal.
	Unused Range `json:"unused"`
	// RecoveryJournal is the 32768 blocks before the summary.
	RecoveryJournal Range `json:"recoveryJournal"`
	// SlabSummary is the last 64 blocks.
	SlabSummary Range `json:"slabSummary"`
}

// normalize fills LVM's defaults into zero fields.
func (g Geometry) normalize() Geometry {
	if g.SlabBytes == 0 {
		g.SlabBytes = DefaultSlabBytes
	}
	if g.IndexMemory.Quarters == 0 {
		g.IndexMemory = IndexMemory{1}
	}
	return g
}

// SlabBits returns log2 of the slab size in blocks, checking that it is a
// power of two within MinSlabBits..MaxSlabBits.
func SlabBits(slabBytes uint64) (uint, error) {
	if slabBytes%BlockSize != 0 || slabBytes == 0 || bits.OnesCount64(slabBytes) != 1 {
		return 0, fmt.Errorf("slab size %d bytes: not a power of two of 4 KiB blocks", slabBytes)
	}
	b := uint(bits.TrailingZeros64(slabBytes / BlockSize))
	if b < MinSlabBits || b > MaxSlabBits {
		return 0, fmt.Errorf("slab size %d bytes: %d slab bits outside %d..%d (32 MiB .. 32 GiB)", slabBytes, b, MinSlabBits, MaxSlabBits)
	}
	return b, nil
}

// MinimumBlocks is the smallest pool vdoformat accepts for a geometry
// (calculateMinimumVDOFromConfig): index + geometry block + super block +
// 60 roots + recovery journal + slab summary + one slab. With LVM's defaults
// it is 1236309 blocks (5,063,921,664 bytes); with 128 MiB slabs 744789.
func MinimumBlocks(g Geometry) (uint64, error) {
	g = g.normalize()
	sb, err := SlabBits(g.SlabBytes)
	if err != nil {
		return 0, err
	}
	ib, err := IndexBlocks(g.IndexMemory, g.Sparse)
	if err != nil {
		return 0, err
	}
	return ib + 2 + BlockMapRoots + TailBlocks + 1<<sb, nil
}

// NewLayout computes the layout of a pool. It fails for an invalid slab
// size, an unknown index size, a pool above 256 TiB or with more than 8192
// slabs, and, wrapping ErrTooSmall, for a pool without room for one slab;
// that error names the minimum in bytes as vdoformat does.
func NewLayout(g Geometry) (Layout, error) {
	g = g.normalize()
	sb, err := SlabBits(g.SlabBytes)
	if err != nil {
		return Layout{}, err
	}
	ib, err := IndexBlocks(g.IndexMemory, g.Sparse)
	if err != nil {
		return Layout{}, err
	}
	slab, err := ConfigureSlab(1 << sb)
	if err != nil {
		return Layout{}, err
	}
	p := g.PhysicalBlocks()
	if p > MaxPhysicalBlocks {
		return Layout{}, fmt.Errorf("pool of %s: above VDO's maximum of %d blocks (256 TiB)", units.FormatSize(g.PhysicalBytes), uint64(MaxPhysicalBlocks))
	}
	min, _ := MinimumBlocks(g)
	if p < min {
		return Layout{}, fmt.Errorf("pool of %s (%d bytes): minimum required size for this VDO geometry is %d bytes (%s, %d blocks): %w",
			units.FormatSize(g.PhysicalBytes), g.PhysicalBytes, min*BlockSize, units.FormatSize(min*BlockSize), min, ErrTooSmall)
	}
	d := 1 + ib
	l := Layout{
		Geometry:       g,
		PhysicalBlocks: p,
		SlabBits:       sb,
		GeometryBlock:  span(0, 1),
		Index:          span(1, ib),
		SuperBlock:     span(d, 1),
		BlockMapRoots:  span(d+1, BlockMapRoots),
		DepotStart:     d + 1 + BlockMapRoots,
		Slab:           slab,
	}
	journalStart := p - TailBlocks
	depot := journalStart - l.DepotStart
	l.Slabs = depot >> sb
	if l.Slabs > MaxSlabs {
		return Layout{}, fmt.Errorf("pool of %s: %d slabs of %s exceed VDO's %d: %w",
			units.FormatSize(g.PhysicalBytes), l.Slabs, units.FormatSize(g.SlabBytes), MaxSlabs, ErrTooManySlabs)
	}
	depotEnd := l.DepotStart + l.Slabs<<sb
	l.Unused = span(depotEnd, journalStart-depotEnd)
	l.RecoveryJournal = span(journalStart, RecoveryJournalBlocks)
	l.SlabSummary = span(p-SlabSummaryBlocks, SlabSummaryBlocks)
	return l, nil
}

// PhysicalBlocks is the pool size in whole 4K blocks.
func (g Geometry) PhysicalBlocks() uint64 { return g.PhysicalBytes / BlockSize }

// SlabRange returns the blocks of slab k (0-based).
func (l Layout) SlabRange(k uint64) Range {
	return span(l.DepotStart+k*l.Slab.Blocks, l.Slab.Blocks)
}

// DataBlocks is the number of blocks available for data and block-map
// pages: slabs x data blocks per slab.
func (l Layout) DataBlocks() uint64 { return l.Slabs * l.Slab.DataBlocks }

// AddressableBytes is what vdoformat reports the pool "can address": whole
// slabs x slab size (including each slab's metadata, as vdoformat counts it).
func (l Layout) AddressableBytes() uint64 { return l.Slabs * l.Slab.Blocks * BlockSize }

// ZeroWasteBlocks is the largest pool with the same slab count and no unused
// remainder, i.e. the size to ask for to waste nothing.
func (l Layout) ZeroWasteBlocks() uint64 { return l.PhysicalBlocks - l.Unused.Count }

// NextSlabBlocks is the smallest pool size with one slab more.
func (l Layout) NextSlabBlocks() uint64 { return l.ZeroWasteBlocks() + l.Slab.Blocks }

// CapacityLines are the lines vdoformat prints after formatting
// (describeCapacity in the vdo userspace's utils/vdo/vdoformat.c), e.g.
//
//	The VDO volume can address 36.00 GB in 18 data slabs, each 2.00 GB.
//	It can grow to address at most 16.00 TB of physical storage in 8192 slabs.
//	If a larger maximum size might be needed, use bigger slabs.
//
// Below 8192 slabs the second line follows, and the third when the slabs
// are smaller than the largest (2^23 blocks, 32 GiB); at 8192 slabs
// vdoformat says the volume cannot grow instead, and suggests larger slabs
// under the same condition.
func (l Layout) CapacityLines() []string {
	first := fmt.Sprintf("The VDO volume can address %s in %d data slab", readableSize(l.AddressableBytes()), l.Slabs)
	if l.Slabs != 1 {
		first += "s"
	}
	if l.Slabs > 1 {
		first += ", each " + readableSize(l.Slab.Blocks*BlockSize)
	}
	out := []string{first + "."}
	smallSlabs := l.SlabBits < MaxSlabBits
	if l.Slabs < MaxSlabs {
		out = append(out, fmt.Sprintf("It can grow to address at most %s of physical storage in %d slabs.",
			readableSize(MaxSlabs*l.Slab.Blocks*BlockSize), MaxSlabs))
		if smallSlabs {
			out = append(out, "If a larger maximum size might be needed, use bigger slabs.")
		}
	} else {
		out = append(out, "The volume has the maximum number of slabs and so cannot grow.")
		if smallSlabs {
			out = append(out, "Consider using larger slabs to allow the volume to grow.")
		}
	}
	return out
}

// readableSize mimics vdoformat's printReadableSize: divide by 1024 while the
// integer is at least 1024, keeping the last step as a float32 quotient, and
// print "%4.2f" with B, KB, MB, GB, TB or PB (1024-based despite the labels).
func readableSize(n uint64) string {
	units := []string{"B", "KB", "MB", "GB", "TB", "PB"}
	u := 0
	var f float32
	for n >= 1024 && u < len(units)-1 {
		f = float32(n) / 1024
		n /= 1024
		u++
	}
	if u == 0 {
		return fmt.Sprintf("%d %s", n, units[0])
	}
	return fmt.Sprintf("%4.2f %s", float64(f), units[u])
}

func ceilDiv(a, b uint64) uint64 {
	if a == 0 {
		return 0
	}
	return (a-1)/b + 1
}
