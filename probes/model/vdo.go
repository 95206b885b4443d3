package model

import (
	"fmt"
	"strconv"
	"strings"
)

// VDOBlockSize is the size of one VDO block.
const VDOBlockSize = 4096

// VDOPool is an LVM VDO pool: LVM's settings, the live dm-vdo table, status
// and statistics, and the on-disk layout of its _vdata device.
type VDOPool struct {
	VG     string   `json:"vg"`
	Name   string   `json:"name"`   // pool LV name
	LV     string   `json:"lv"`     // "vg/pool"
	DataLV string   `json:"dataLV"` // "vg/pool_vdata"
	VDOLVs []string `json:"vdolvs"` // "vg/lv" of the VDO LVs using this pool
	DMName string   `json:"dmName"` // the vdo target's dm name ("vg0-vpool-vpool")
	// Settings holds every vdo_* field LVM reported for the pool, raw.
	Settings map[string]string `json:"settings"`
	Table    *VDOTable         `json:"table"`    // nil when the pool is inactive
	Status   *VDOStatus        `json:"status"`   // nil when the pool is inactive
	Stats    *VDOStats         `json:"stats"`    // nil when inactive or the stats message failed
	OnDisk   *VDOLayout        `json:"onDisk"`   // from the geometry and super block; nil when unreadable
	Computed *VDOLayout        `json:"computed"` // from the physical size, as a cross-check; nil when unknown
	Regions  []VDORegion       `json:"regions"`  // where index, super block, journal and summary sit, mapped to PVs
	// Monitor is the pool segment's seg_monitor and Profile the metadata
	// profile attached to the pool (lv_profile), as for ThinPool.
	Monitor string   `json:"monitor,omitempty"`
	Profile string   `json:"profile,omitempty"`
	Errors  []string `json:"errors"`
}

// VDOTable is a parsed dm-vdo table line (V4).
type VDOTable struct {
	Version             string `json:"version"`        // "V4"
	LogicalSectors      uint64 `json:"logicalSectors"` // dm length
	StorageDevice       string `json:"storageDevice"`  // "/dev/dm-0"
	PhysicalBlocks      uint64 `json:"physicalBlocks"`
	MinimumIOSize       uint64 `json:"minimumIOSize"` // bytes
	BlockMapCacheBlocks uint64 `json:"blockMapCacheBlocks"`
	BlockMapEraLength   uint64 `json:"blockMapEraLength"`
	MaxDiscard          uint64 `json:"maxDiscard"` // 4K blocks
	Ack                 int    `json:"ack"`
	Bio                 int    `json:"bio"`
	BioRotationInterval int    `json:"bioRotationInterval"`
	CPU                 int    `json:"cpu"`
	Hash                int    `json:"hash"`
	Logical             int    `json:"logical"`
	Physical            int    `json:"physical"`
	Deduplication       bool   `json:"deduplication"`
	Compression         bool   `json:"compression"`
	// Options holds every key/value pair of the line, known or not.
	Options map[string]string `json:"options"`
}

// VDOStatus is a parsed dm-vdo status line.
type VDOStatus struct {
	Device           string `json:"device"` // backing device
	Mode             string `json:"mode"`   // normal, recovering, read-only
	InRecovery       bool   `json:"inRecovery"`
	IndexState       string `json:"indexState"`       // online, offline, closed, ...
	CompressionState string `json:"compressionState"` // online, offline
	UsedBlocks       uint64 `json:"usedBlocks"`
	TotalBlocks      uint64 `json:"totalBlocks"`
}

// UsedPercent is used/total, or -1 when total is 0.
func (s *VDOStatus) UsedPercent() float64 {
	if s == nil || s.TotalBlocks == 0 {
		return -1
	}
	return 100 * float64(s.UsedBlocks) / float64(s.TotalBlocks)
}

// VDOStats holds the health-relevant values of `dmsetup message <dev> 0 stats`.
type VDOStats struct {
	DataBlocksUsed       uint64 `json:"dataBlocksUsed"`
	OverheadBlocksUsed   uint64 `json:"overheadBlocksUsed"`
	LogicalBlocksUsed    uint64 `json:"logicalBlocksUsed"`
	PhysicalBlocks       uint64 `json:"physicalBlocks"`
	LogicalBlocks        uint64 `json:"logicalBlocks"`
	Mode                 string `json:"mode"`
	CompleteRecoveries   uint64 `json:"completeRecoveries"`
	ReadOnlyRecoveries   uint64 `json:"readOnlyRecoveries"`
	DedupeAdviceValid    uint64 `json:"dedupeAdviceValid"`    // hashLock.dedupeAdviceValid
	DedupeAdviceStale    uint64 `json:"dedupeAdviceStale"`    // hashLock.dedupeAdviceStale
	DedupeAdviceTimeouts uint64 `json:"dedupeAdviceTimeouts"` // dedupeAdviceTimeouts
	InvalidAdvicePBN     uint64 `json:"invalidAdvicePBN"`     // errors.invalidAdvicePBNCount
	NoSpaceErrors        uint64 `json:"noSpaceErrors"`        // errors.noSpaceErrorCount
	ReadOnlyErrors       uint64 `json:"readOnlyErrors"`       // errors.readOnlyErrorCount
	// Values holds every leaf of the message flattened to "a.b" → raw value.
	Values map[string]string `json:"values"`
}

// SavingPercent is vdostats' saving: (logicalUsed − dataUsed)/logicalUsed, -1 when undefined.
func (s *VDOStats) SavingPercent() float64 {
	if s == nil || s.LogicalBlocksUsed == 0 || s.DataBlocksUsed > s.LogicalBlocksUsed {
		return -1
	}
	return 100 * float64(s.LogicalBlocksUsed-s.DataBlocksUsed) / float64(s.LogicalBlocksUsed)
}

// VDOLayout gives the block ranges of a VDO volume's metadata, in 4 KiB
// blocks from the start of the storage device (pbn − bio offset).
type VDOLayout struct {
	PhysicalBlocks uint64     `json:"physicalBlocks"`
	BioOffset      uint64     `json:"bioOffset"`
	Nonce          uint64     `json:"nonce"`
	IndexMemory    uint32     `json:"indexMemory"` // geometry index memory code (0xFFFFFF00 = 0.25 GB)
	SparseIndex    bool       `json:"sparseIndex"`
	Index          BlockRange `json:"index"`
	SuperBlock     BlockRange `json:"superBlock"`
	BlockMapRoots  BlockRange `json:"blockMapRoots"`
	SlabDepot      BlockRange `json:"slabDepot"`
	Journal        BlockRange `json:"journal"`  // recovery journal
	Summary        BlockRange `json:"summary"`  // slab summary
	SlabSize       uint64     `json:"slabSize"` // blocks
	LogicalBlocks  uint64     `json:"logicalBlocks"`
	State          string     `json:"state"` // super block state: clean, dirty, ...
}

// BlockRange is an inclusive range of VDO blocks.
type BlockRange struct {
	First uint64 `json:"first"`
	Last  uint64 `json:"last"`
}

// Count is the number of blocks in the range.
func (r BlockRange) Count() uint64 { return r.Last - r.First + 1 }

// VDORegion places one metadata region on PVs through the _vdata segments.
type VDORegion struct {
	Name   string     `json:"name"` // "index", "super block", "recovery journal", "slab summary"
	Blocks BlockRange `json:"blocks"`
	On     []PVRange  `json:"on"`
	// Fast is true when every PV holding the region is non-rotational.
	Fast bool `json:"fast"`
}

// ParseVDOStatus parses the arguments of a vdo status line (after "vdo").
func ParseVDOStatus(args string) (*VDOStatus, error) {
	f := strings.Fields(args)
	if len(f) != 7 {
		return nil, fmt.Errorf("dmsetup status: vdo: %d fields, want 7", len(f))
	}
	used, err := strconv.ParseUint(f[5], 10, 64)
	if err != nil {
		return nil, fmt.Errorf("dmsetup status: vdo: field used blocks: %w", err)
	}
	total, err := strconv.ParseUint(f[6], 10, 64)
	if err != nil {
		return nil, fmt.Errorf("dmsetup status: vdo: field total blocks: %w", err)
	}
	return &VDOStatus{Device: f[0], Mode: f[1], InRecovery: f[2] == "recovering", IndexState: f[3],
		CompressionState: f[4], UsedBlocks: used, TotalBlocks: total}, nil
}
