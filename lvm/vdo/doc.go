// Package vdo is the arithmetic of an LVM-VDO pool: where vdoformat puts the
// UDS index, the super block, the block-map roots, the slabs, the recovery
// journal and the slab summary; how much logical space a thick pool can
// really hold; the RAM LVM bills for a pool; a thread layout matched to the
// CPU count; the extents of a pool split across fast and slow PVs; and the
// lvcreate command line. Everything here is pure: no I/O, no host state.
//
// All block counts are 4096-byte VDO blocks counted from byte 0 of the pool's
// data LV (the <pool>_vdata sub-LV in LVM). The sources are the kernel's
// drivers/md/dm-vdo (encodings.c, block-map.c, slab-depot.c,
// dm-vdo-target.c), dm-vdo/vdo 8.3.1.1 userspace (vdoformat.c, vdoConfig.c)
// and lvm2 (lib/metadata/vdo_manip.c, lib/metadata/lv_manip.c,
// man/lvmvdo.7_main). docs/vdo-sizing.md explains every number with its
// source; the tests reproduce the layouts measured on real pools.
package vdo

// BlockSize is the size of a VDO block in bytes.
const BlockSize = 4096

// Fixed sizes of a pool formatted by vdoformat (LVM has no option to change them).
const (
	// RecoveryJournalBlocks is DEFAULT_VDO_RECOVERY_JOURNAL_SIZE (32 Ki blocks, 128 MiB).
	RecoveryJournalBlocks = 32768
	// SlabSummaryBlocks is VDO_SLAB_SUMMARY_BLOCKS: 8192 slabs / 2048 entries
	// per block x 16 zones = 64 blocks (256 KiB).
	SlabSummaryBlocks = 64
	// TailBlocks is what sits after the slab depot: journal plus summary,
	// always the last 32832 blocks (128.25 MiB) of the data LV.
	TailBlocks = RecoveryJournalBlocks + SlabSummaryBlocks
	// BlockMapRoots is DEFAULT_VDO_BLOCK_MAP_TREE_ROOT_COUNT.
	BlockMapRoots = 60
	// SlabJournalBlocks is DEFAULT_VDO_SLAB_JOURNAL_SIZE, the journal at the end of each slab.
	SlabJournalBlocks = 224
	// RefCountsPerBlock is COUNTS_PER_BLOCK: 504 one-byte counts per
	// 512-byte sector, 8 sectors per block.
	RefCountsPerBlock = 4032
	// BlockMapEntriesPerPage is VDO_BLOCK_MAP_ENTRIES_PER_PAGE.
	BlockMapEntriesPerPage = 812
	// BlockMapTreeHeight is VDO_BLOCK_MAP_TREE_HEIGHT.
	BlockMapTreeHeight = 5
	// MaxSlabs is MAX_VDO_SLABS.
	MaxSlabs = 8192
	// MinSlabBits and MaxSlabBits bound the slab size (2^13 .. 2^23 blocks).
	MinSlabBits = 13
	MaxSlabBits = 23
	// MaxPhysicalBlocks is MAXIMUM_VDO_PHYSICAL_BLOCKS (256 TiB).
	MaxPhysicalBlocks = 1 << 36
	// MaxLogicalBlocks is MAXIMUM_VDO_LOGICAL_BLOCKS (4 PiB).
	MaxLogicalBlocks = 1 << 40
)

// LVM defaults (lib/config/defaults.h) and the VDO LV header.
const (
	// DefaultSlabBytes is LVM's vdo_slab_size_mb default, 2 GiB.
	DefaultSlabBytes = 2 << 30
	// DefaultIndexMemoryBytes is LVM's vdo_index_memory_size_mb default, 256 MiB.
	DefaultIndexMemoryBytes = 256 << 20
	// DefaultBlockMapCacheBytes is LVM's vdo_block_map_cache_size_mb default, 128 MiB.
	DefaultBlockMapCacheBytes = 128 << 20
	// HeaderBytes is LVM's vdo_pool_header_size: an empty 512 KiB header at the
	// front and at the back of the VDO pool's logical space. The VDO device
	// is therefore 1 MiB larger than the VDO LV (observed: 20 GiB -V gives a
	// 41945088-sector table line).
	HeaderBytes = 512 << 10
	// DefaultExtentBytes is the default LVM physical extent size, 4 MiB.
	DefaultExtentBytes = 4 << 20
)
