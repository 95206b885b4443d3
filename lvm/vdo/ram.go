package vdo

// RAM is the memory LVM requires before it creates a VDO pool
// (check_vdo_constrains in lib/metadata/vdo_manip.c; lvmvdo(7) "Memory"),
// itemised in MiB with LVM's rounding.
type RAM struct {
	// FixedMiB is the fixed 38 MiB.
	FixedMiB uint64 `json:"fixedMiB"`
	// BlockMapCacheMiB is ceil(1177 x cache MiB / 1024) (1.15 MiB per MiB of
	// cache), at least 150.
	BlockMapCacheMiB uint64 `json:"blockMapCacheMiB"`
	// LogicalMiB is ceil(1638 x started TiB of virtual size / 1024): 1.6 MiB
	// per TiB of logical space, a term the VDO article's table leaves out.
	LogicalMiB uint64 `json:"logicalMiB"`
	// PhysicalMiB is ceil(268 x physical bytes / 1 TiB): 268 MiB per TiB.
	PhysicalMiB uint64 `json:"physicalMiB"`
	// IndexMiB is index_memory_size_mb as given to LVM.
	IndexMiB uint64 `json:"indexMiB"`
}

// TotalMiB is the sum LVM compares with free memory ("449.00 MiB RAM is required").
func (r RAM) TotalMiB() uint64 {
	return r.FixedMiB + r.BlockMapCacheMiB + r.LogicalMiB + r.PhysicalMiB + r.IndexMiB
}

// RAMBill computes LVM's RAM requirement for a pool of physicalBytes with a
// VDO LV of virtualBytes, a block-map cache of cacheMiB and an index of
// indexMiB. For 10 GiB / 20 GiB / 128 / 256 it gives 38+150+2+3+256 = 449 MiB,
// as LVM printed in the test guest.
func RAMBill(physicalBytes, virtualBytes, cacheMiB, indexMiB uint64) RAM {
	const tib = 1 << 40
	return RAM{
		FixedMiB:         38,
		BlockMapCacheMiB: max(ceilDiv(1177*cacheMiB, 1024), 150),
		LogicalMiB:       ceilDiv(1638*ceilDiv(virtualBytes, tib), 1024),
		PhysicalMiB:      ceilDiv268(physicalBytes),
		IndexMiB:         indexMiB,
	}
}

// ceilDiv268 is ceil(268 x b / 2^40) without overflowing for b up to 2^64.
func ceilDiv268(b uint64) uint64 {
	const tib = 1 << 40
	q, r := b/tib, b%tib
	// 268*b/tib = 268*q + 268*r/tib; 268*r < 2^49 fits.
	return 268*q + ceilDiv(268*r, tib)
}
