package schema

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/keel-storage/keel/lvm/units"
	"github.com/keel-storage/keel/lvm/vdo"
	"github.com/keel-storage/keel/schema/spec"
)

// vdoGeometry checks VDO pools with vdoformat's arithmetic (lvm/vdo): a
// pool below VDO's minimum size, a virtual size above what a thick pool can
// address (unless overcommit), and explicit threads the pool cannot run
// (physical threads above the slab count, logical zones above what the
// block-map cache feeds).
func (c *checker) vdoGeometry() {
	for _, vg := range slices.Sorted(maps.Keys(c.cfg.VolumeGroups)) {
		g := c.cfg.VolumeGroups[vg]
		for _, name := range slices.Sorted(maps.Keys(g.VDOPools)) {
			c.vdoPool(vg, name, g.VDOPools[name])
		}
	}
}

func (c *checker) vdoPool(vg, name string, p spec.VDOPool) {
	base := []any{"volumeGroups", vg, "vdoPools", name}
	path := func(f ...any) []any { return append(append([]any{}, base...), f...) }
	for _, s := range []units.Size{p.Size, p.VirtualSize, p.SlabSize, p.IndexMemory, p.BlockMapCache} {
		if s.Err() != nil {
			return // reported by sizes
		}
	}
	size, virt, slab, idx, cache := p.Size.Bytes, p.VirtualSize.Bytes, p.SlabSize.Bytes, p.IndexMemory.Bytes, p.BlockMapCache.Bytes
	im, err := vdo.IndexMemoryFromBytes(idx)
	if err != nil {
		c.at("vdo", fmt.Sprintf("vdo pool %s/%s: %v", vg, name, err), path("indexMemory")...)
		return
	}
	geo := vdo.Geometry{PhysicalBytes: size, SlabBytes: slab, IndexMemory: im, Sparse: p.SparseIndex}
	layout, err := vdo.NewLayout(geo)
	if errors.Is(err, vdo.ErrTooSmall) {
		min, _ := vdo.MinimumBlocks(geo)
		c.at("vdo", fmt.Sprintf("vdo pool %s/%s: size %s is below VDO's minimum of %s (%d bytes) for %s slabs and a %s index",
			vg, name, p.Size, units.FormatSize(min*vdo.BlockSize), min*vdo.BlockSize, p.SlabSize, p.IndexMemory), path("size")...)
		return
	}
	if errors.Is(err, vdo.ErrTooManySlabs) {
		c.at("vdo", fmt.Sprintf("vdo pool %s/%s: %v", vg, name, tooManySlabs(geo, err)), path("slabSize")...)
		return
	}
	if err != nil {
		c.at("vdo", fmt.Sprintf("vdo pool %s/%s: %v", vg, name, err), path("size")...)
		return
	}
	if !p.Overcommit {
		if max := layout.MaxThickVirtualBytes(vdo.DefaultExtentBytes); virt > max {
			c.at("vdo", fmt.Sprintf("vdo pool %s/%s: virtualSize %s is above the %s a %s pool can address thick (%d slabs of %s); lower it or set overcommit: true",
				vg, name, p.VirtualSize, units.FormatSize(max), p.Size, layout.Slabs, p.SlabSize), path("virtualSize")...)
		}
	}
	if p.Threads.Auto {
		return
	}
	t := p.Threads
	if uint64(t.Physical) > layout.Slabs {
		c.at("vdo", fmt.Sprintf("vdo pool %s/%s: %d physical threads exceed the pool's %d slabs (the kernel refuses to load it)",
			vg, name, t.Physical, layout.Slabs), path("threads", "physical")...)
		return
	}
	vt := t.Threads
	if err := vt.Validate(layout.Slabs, cache/vdo.BlockSize); err != nil {
		c.at("vdo", fmt.Sprintf("vdo pool %s/%s: %v", vg, name, err), path("threads")...)
	}
}

// tooManySlabs says which slabSize fits a pool too large for its slabs:
// the smallest power of two (VDO's 128M..32G) that gives at most
// vdo.MaxSlabs slabs.
func tooManySlabs(geo vdo.Geometry, err error) string {
	for slab := uint64(128 << 20); slab <= 32<<30; slab <<= 1 {
		g := geo
		g.SlabBytes = slab
		if slab > geo.SlabBytes {
			if _, e := vdo.NewLayout(g); e == nil {
				return fmt.Sprintf("size %s needs more than VDO's %d slabs of slabSize %s: set slabSize to %s or more",
					units.FormatSize(geo.PhysicalBytes), vdo.MaxSlabs, units.FormatSize(geo.SlabBytes), units.FormatSize(slab))
			}
		}
	}
	return fmt.Sprintf("%v: no slabSize up to 32G fits; lower size", err)
}
