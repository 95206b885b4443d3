package vdo

// forestLevels returns the number of interior block-map pages per root at
// each tree height for a logical size, as vdo_compute_new_forest_pages does:
// the leaf pages (one per 812 logical blocks, at least one) are shared out
// among the 60 roots, and each level above needs one page per 812 pages
// below it.
func forestLevels(logicalBlocks uint64) [BlockMapTreeHeight]uint64 {
	var lv [BlockMapTreeHeight]uint64
	leaves := max(ceilDiv(logicalBlocks, BlockMapEntriesPerPage), 1)
	size := ceilDiv(leaves, BlockMapRoots)
	for h := range lv {
		size = ceilDiv(size, BlockMapEntriesPerPage)
		lv[h] = size
	}
	return lv
}

// InteriorPages is the number of non-leaf block-map pages that come out of
// the slabs for a logical size: all five levels of vdo_compute_new_forest_pages
// for 60 roots, less the top two, which are the roots stored before the depot
// and the in-memory super-roots (compute_forest_size in vdoConfig.c). It is
// 180 for any logical size up to 812 x 812 x 60 blocks (about 150 TiB).
func InteriorPages(logicalBlocks uint64) uint64 {
	lv := forestLevels(logicalBlocks)
	var total uint64
	for h := 0; h < BlockMapTreeHeight-2; h++ {
		total += lv[h] * BlockMapRoots
	}
	return total
}

// ForestBlocks is vdoformat's estimate of the block-map pages a logical size
// needs (compute_forest_size in vdoConfig.c): interior pages, plus one leaf
// per 812 of the logical blocks left after the interior pages.
func ForestBlocks(logicalBlocks uint64) uint64 {
	in := InteriorPages(logicalBlocks)
	rest := uint64(0)
	if logicalBlocks > in {
		rest = logicalBlocks - in
	}
	return in + ceilDiv(rest, BlockMapEntriesPerPage)
}

// DefaultLogicalBlocks is the logical size vdoformat picks without
// --logical-size ("Logical blocks defaulted to N blocks"): the data blocks
// of all slabs less ForestBlocks of them. 523108 for a 5 GiB default pool,
// 1569686 for 10 GiB.
func (l Layout) DefaultLogicalBlocks() uint64 {
	d := l.DataBlocks()
	return d - ForestBlocks(d)
}

// BlockMapPages is what a logical size costs in slab blocks once every
// logical block is written: one leaf page per 812 logical blocks plus the
// interior pages.
func BlockMapPages(logicalBlocks uint64) uint64 {
	return ceilDiv(logicalBlocks, BlockMapEntriesPerPage) + InteriorPages(logicalBlocks)
}

// FitsThick reports whether a VDO device of logicalBlocks can be written end
// to end with data nothing deduplicates or compresses: logical blocks plus
// the block-map pages they need must fit in the slabs' data blocks.
func (l Layout) FitsThick(logicalBlocks uint64) bool {
	return logicalBlocks+BlockMapPages(logicalBlocks) <= l.DataBlocks()
}

// MaxThickLogicalBlocks is the largest VDO logical size (in blocks) that
// FitsThick, found by bisection over the monotone cost.
func (l Layout) MaxThickLogicalBlocks() uint64 {
	lo, hi := uint64(0), l.DataBlocks() // lo fits, hi+1 does not
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if l.FitsThick(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// VirtualBlocks is the VDO device's logical size for an LVM VDO LV of
// virtualBytes: the LV plus LVM's two 512 KiB headers, in blocks (rounded up).
func VirtualBlocks(virtualBytes uint64) uint64 {
	return ceilDiv(virtualBytes+2*HeaderBytes, BlockSize)
}

// MaxThickVirtualBytes is the largest VDO LV size (lvcreate -V) that is a
// multiple of extentBytes and whose VDO device FitsThick. 35 GiB for the
// 40 GiB lab pool (36 GiB does not fit). It returns 0 if not even one extent
// fits.
func (l Layout) MaxThickVirtualBytes(extentBytes uint64) uint64 {
	if extentBytes == 0 {
		extentBytes = DefaultExtentBytes
	}
	maxL := l.MaxThickLogicalBlocks()
	hdr := uint64(2 * HeaderBytes / BlockSize)
	if maxL <= hdr {
		return 0
	}
	b := (maxL - hdr) * BlockSize
	return b / extentBytes * extentBytes
}
