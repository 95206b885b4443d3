package vdo

import (
	"fmt"
)

// Extents is an inclusive range of logical extents (LEs) of the pool's data LV.
type Extents struct {
	First uint64 `json:"first"`
	Last  uint64 `json:"last"`
	Count uint64 `json:"count"`
}

func extentSpan(first, last uint64) Extents {
	return Extents{First: first, Last: last, Count: last - first + 1}
}

// JournalExtents returns the logical extents that hold the recovery journal
// and the slab summary, the last 32832 blocks of the data LV: from LE
// floor((P-32832)/extentBlocks) to the last LE. With 4 MiB extents (1024
// blocks) and P a whole number of extents that is 33 extents, because the
// journal starts 3.75 MiB into its first extent.
func JournalExtents(physicalBlocks, extentBlocks uint64) Extents {
	return extentSpan((physicalBlocks-TailBlocks)/extentBlocks, ceilDiv(physicalBlocks, extentBlocks)-1)
}

// SplitPlan is a pool laid out as three LVM segments: the head (geometry,
// UDS index, super block, block-map roots) and the tail (recovery journal,
// slab summary) on fast PVs, the middle (the slabs) on slow PVs. Head and
// tail are the smallest whole-extent ranges that cover their metadata; the
// head also carries the start of slab 0.
type SplitPlan struct {
	ExtentBytes  uint64  `json:"extentBytes"`
	ExtentBlocks uint64  `json:"extentBlocks"`
	TotalExtents uint64  `json:"totalExtents"`
	Head         Extents `json:"head"`
	Middle       Extents `json:"middle"`
	Tail         Extents `json:"tail"`
}

// Split computes the head, middle and tail extents of a pool for an extent
// size (0 means 4 MiB). The pool must be a whole number of extents, as LVM
// makes it, and large enough for a middle between head and tail.
func (l Layout) Split(extentBytes uint64) (SplitPlan, error) {
	if extentBytes == 0 {
		extentBytes = DefaultExtentBytes
	}
	if extentBytes%BlockSize != 0 {
		return SplitPlan{}, fmt.Errorf("extent size %d bytes: not a multiple of 4 KiB", extentBytes)
	}
	eb := extentBytes / BlockSize
	if l.PhysicalBlocks%eb != 0 {
		return SplitPlan{}, fmt.Errorf("pool of %d blocks: not a whole number of %d-byte extents", l.PhysicalBlocks, extentBytes)
	}
	n := l.PhysicalBlocks / eb
	head := extentSpan(0, ceilDiv(l.DepotStart, eb)-1)
	tail := JournalExtents(l.PhysicalBlocks, eb)
	if head.Last+1 >= tail.First {
		return SplitPlan{}, fmt.Errorf("pool of %d extents: head (LE 0..%d) and tail (LE %d..%d) leave no middle for a slow PV",
			n, head.Last, tail.First, tail.Last)
	}
	return SplitPlan{
		ExtentBytes:  extentBytes,
		ExtentBlocks: eb,
		TotalExtents: n,
		Head:         head,
		Middle:       extentSpan(head.Last+1, tail.First-1),
		Tail:         tail,
	}, nil
}

// GrowStep is one lvextend of a split pool's VDO pool LV.
type GrowStep struct {
	// Fast is true for a step that must allocate on the fast PVs.
	Fast    bool   `json:"fast"`
	Extents uint64 `json:"extents"`
	Bytes   uint64 `json:"bytes"`
}

// GrowPlan is how to grow a split pool so that the recovery journal and the
// slab summary end up on the fast PVs again.
type GrowPlan struct {
	RequestedBytes uint64     `json:"requestedBytes"`
	Steps          []GrowStep `json:"steps"`
	// AddedBytes is the sum of the steps, at least RequestedBytes.
	AddedBytes uint64 `json:"addedBytes"`
	// MinStepBytes is the smallest extend LVM and the kernel accept.
	MinStepBytes uint64 `json:"minStepBytes"`
	// After is the pool's layout after the last step.
	After Layout `json:"-"`
	// Tail is where the journal and summary sit afterwards (on the fast PV).
	Tail Extents `json:"tail"`
}

// MinGrowBytes is the smallest lvextend of a VDO pool: LVM raises every
// extend to max(slab size, 128 MiB + 128 KiB) rounded up to extents
// (lv_manip.c, "Increasing incremental size ... to fit new VDO slab"). The
// kernel needs 32832 blocks (128 MiB + 256 KiB) for the new journal and
// summary and at least one new slab; the extent rounding covers both.
func MinGrowBytes(slabBytes, extentBytes uint64) uint64 {
	m := max(slabBytes, 128<<20+256<<10)
	return ceilDiv(m, extentBytes) * extentBytes
}

// PlanSplitGrow plans growing a split pool by growBytes (rounded up to
// extents). Each lvextend grows VDO at once and moves the journal and
// summary to the new end, so the plan is: first extend on the slow PVs by
// the growth less one minimum step, then extend on the fast PVs by one
// minimum step (one slab with 2 GiB slabs). The last step becomes the new
// tail plus the start of a new slab. A growth of at most one minimum step is
// a single fast step. Between the two steps the journal briefly sits on the
// slow PV; the old tail extents become slab space on the fast PV.
func (l Layout) PlanSplitGrow(growBytes, extentBytes uint64) (GrowPlan, error) {
	if extentBytes == 0 {
		extentBytes = DefaultExtentBytes
	}
	if growBytes == 0 {
		return GrowPlan{}, fmt.Errorf("grow by 0 bytes: nothing to do")
	}
	eb := extentBytes / BlockSize
	slabBytes := l.Slab.Blocks * BlockSize
	minStep := MinGrowBytes(slabBytes, extentBytes)
	grow := ceilDiv(growBytes, extentBytes) * extentBytes
	plan := GrowPlan{RequestedBytes: growBytes, MinStepBytes: minStep}
	if grow > minStep {
		slow := max(grow-minStep, minStep)
		plan.Steps = append(plan.Steps, GrowStep{Fast: false, Extents: slow / extentBytes, Bytes: slow})
	}
	plan.Steps = append(plan.Steps, GrowStep{Fast: true, Extents: minStep / extentBytes, Bytes: minStep})
	for _, s := range plan.Steps {
		plan.AddedBytes += s.Bytes
	}
	g := l.Geometry
	g.PhysicalBytes = l.PhysicalBlocks*BlockSize + plan.AddedBytes
	after, err := NewLayout(g)
	if err != nil {
		return GrowPlan{}, fmt.Errorf("grow by %d bytes: %w", growBytes, err)
	}
	plan.After = after
	plan.Tail = JournalExtents(after.PhysicalBlocks, eb)
	fastFirst := after.PhysicalBlocks/eb - plan.Steps[len(plan.Steps)-1].Extents
	if plan.Tail.First < fastFirst {
		return GrowPlan{}, fmt.Errorf("grow by %d bytes: journal from LE %d would start before the fast extents at LE %d",
			growBytes, plan.Tail.First, fastFirst)
	}
	return plan, nil
}
