package probes

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
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
	Errors   []string          `json:"errors"`
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

// parseVDOTable parses the arguments of a vdo table line (after "vdo").
func parseVDOTable(length uint64, args string) (*VDOTable, error) {
	f := strings.Fields(args)
	if len(f) < 6 {
		return nil, fmt.Errorf("dmsetup table: vdo: %d fields, want at least 6", len(f))
	}
	t := &VDOTable{Version: f[0], LogicalSectors: length, StorageDevice: f[1], Options: map[string]string{},
		MaxDiscard: 1, Ack: 1, Bio: 4, BioRotationInterval: 64, CPU: 1, Deduplication: true}
	if t.Version != "V4" {
		return nil, fmt.Errorf("dmsetup table: vdo: version %q, want V4", t.Version)
	}
	var err error
	num := func(field, s string) uint64 {
		n, e := strconv.ParseUint(s, 10, 64)
		if e != nil && err == nil {
			err = fmt.Errorf("dmsetup table: vdo: field %s: %w", field, e)
		}
		return n
	}
	t.PhysicalBlocks = num("storage size", f[2])
	t.MinimumIOSize = num("minimum I/O size", f[3])
	t.BlockMapCacheBlocks = num("block map cache", f[4])
	t.BlockMapEraLength = num("block map era length", f[5])
	rest := f[6:]
	if len(rest)%2 != 0 {
		return nil, fmt.Errorf("dmsetup table: vdo: odd number of optional arguments (%d)", len(rest))
	}
	for i := 0; i < len(rest); i += 2 {
		k, v := rest[i], rest[i+1]
		t.Options[k] = v
		switch k {
		case "maxDiscard":
			t.MaxDiscard = num(k, v)
		case "ack":
			t.Ack = int(num(k, v))
		case "bio":
			t.Bio = int(num(k, v))
		case "bioRotationInterval":
			t.BioRotationInterval = int(num(k, v))
		case "cpu":
			t.CPU = int(num(k, v))
		case "hash":
			t.Hash = int(num(k, v))
		case "logical":
			t.Logical = int(num(k, v))
		case "physical":
			t.Physical = int(num(k, v))
		case "deduplication":
			t.Deduplication = v == "on"
		case "compression":
			t.Compression = v == "on"
		}
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

// parseVDOStatus parses the arguments of a vdo status line (after "vdo").
func parseVDOStatus(args string) (*VDOStatus, error) {
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

// parseVDOStats parses the output of `dmsetup message <dev> 0 stats`: one
// line of nested "{ key : value, sub : { ... }, }".
func parseVDOStats(b []byte) (*VDOStats, error) {
	vals := map[string]string{}
	p := statsParser{s: strings.TrimSpace(string(b))}
	if err := p.object("", vals); err != nil {
		return nil, fmt.Errorf("dmsetup message stats: %w", err)
	}
	st := &VDOStats{Values: vals, Mode: vals["mode"]}
	var err error
	get := func(key string) uint64 {
		v, ok := vals[key]
		if !ok {
			return 0
		}
		n, e := strconv.ParseUint(v, 10, 64)
		if e != nil && err == nil {
			err = fmt.Errorf("dmsetup message stats: field %s: %w", key, e)
		}
		return n
	}
	st.DataBlocksUsed = get("dataBlocksUsed")
	st.OverheadBlocksUsed = get("overheadBlocksUsed")
	st.LogicalBlocksUsed = get("logicalBlocksUsed")
	st.PhysicalBlocks = get("physicalBlocks")
	st.LogicalBlocks = get("logicalBlocks")
	st.CompleteRecoveries = get("completeRecoveries")
	st.ReadOnlyRecoveries = get("readOnlyRecoveries")
	st.DedupeAdviceValid = get("hashLock.dedupeAdviceValid")
	st.DedupeAdviceStale = get("hashLock.dedupeAdviceStale")
	st.DedupeAdviceTimeouts = get("dedupeAdviceTimeouts")
	st.InvalidAdvicePBN = get("errors.invalidAdvicePBNCount")
	st.NoSpaceErrors = get("errors.noSpaceErrorCount")
	st.ReadOnlyErrors = get("errors.readOnlyErrorCount")
	if err != nil {
		return nil, err
	}
	if _, ok := vals["physicalBlocks"]; !ok {
		return nil, errors.New("dmsetup message stats: field physicalBlocks missing")
	}
	return st, nil
}

type statsParser struct {
	s   string
	pos int
}

func (p *statsParser) skip() {
	for p.pos < len(p.s) && (p.s[p.pos] == ' ' || p.s[p.pos] == '\n' || p.s[p.pos] == '\t') {
		p.pos++
	}
}

func (p *statsParser) object(prefix string, out map[string]string) error {
	p.skip()
	if p.pos >= len(p.s) || p.s[p.pos] != '{' {
		return fmt.Errorf("at offset %d: want '{'", p.pos)
	}
	p.pos++
	for {
		p.skip()
		if p.pos >= len(p.s) {
			return fmt.Errorf("at offset %d: unterminated object %q", p.pos, prefix)
		}
		if p.s[p.pos] == '}' {
			p.pos++
			return nil
		}
		colon := strings.IndexByte(p.s[p.pos:], ':')
		if colon < 0 {
			return fmt.Errorf("at offset %d: want 'key :'", p.pos)
		}
		key := strings.TrimSpace(p.s[p.pos : p.pos+colon])
		if key == "" || strings.ContainsAny(key, "{},") {
			return fmt.Errorf("at offset %d: bad key %q", p.pos, key)
		}
		p.pos += colon + 1
		p.skip()
		full := key
		if prefix != "" {
			full = prefix + "." + key
		}
		if p.pos < len(p.s) && p.s[p.pos] == '{' {
			if err := p.object(full, out); err != nil {
				return err
			}
		} else {
			end := strings.IndexAny(p.s[p.pos:], ",}")
			if end < 0 {
				return fmt.Errorf("field %s: unterminated value", full)
			}
			out[full] = strings.TrimSpace(p.s[p.pos : p.pos+end])
			p.pos += end
		}
		p.skip()
		if p.pos < len(p.s) && p.s[p.pos] == ',' {
			p.pos++
		}
	}
}

// vdoChecksum is the CRC-32 VDO stores after its encoded blocks: the IEEE
// polynomial seeded with all ones (checked against real geometry blocks).
func vdoChecksum(b []byte) uint32 {
	return crc32.Update(0xffffffff, crc32.IEEETable, b)
}

var superBlockStates = []string{"dirty", "new", "clean", "read-only", "force-rebuild", "recovering", "replaying", "rebuild-for-upgrade"}

// decodeVDOGeometry decodes the geometry block (block 0 of the storage
// device) and returns the layout fields it holds: index range, super block
// position, bio offset, nonce.
func decodeVDOGeometry(b []byte) (*VDOLayout, error) {
	if len(b) < 0x65 {
		return nil, fmt.Errorf("vdo geometry: %d bytes, want at least 101", len(b))
	}
	if string(b[:8]) != "dmvdo001" {
		return nil, fmt.Errorf("vdo geometry: magic %q, want \"dmvdo001\"", b[:8])
	}
	le := binary.LittleEndian
	id, major := le.Uint32(b[8:]), le.Uint32(b[12:])
	if id != 5 || (major != 5 && major != 4) {
		return nil, fmt.Errorf("vdo geometry: header id %d version %d, want id 5 version 4 or 5", id, major)
	}
	l := &VDOLayout{Nonce: le.Uint64(b[0x20:])}
	regions := 0x40
	if major == 5 {
		l.BioOffset = le.Uint64(b[0x38:])
	} else {
		regions = 0x38
	}
	if len(b) < regions+24+9 {
		return nil, fmt.Errorf("vdo geometry: %d bytes, too short for version %d", len(b), major)
	}
	var indexStart, dataStart uint64
	for i := range 2 {
		off := regions + 12*i
		rid, start := le.Uint32(b[off:]), le.Uint64(b[off+4:])
		switch rid {
		case 0:
			indexStart = start
		case 1:
			dataStart = start
		default:
			return nil, fmt.Errorf("vdo geometry: region %d has unknown id %d", i, rid)
		}
	}
	if dataStart <= indexStart {
		return nil, fmt.Errorf("vdo geometry: data region start %d not after index start %d", dataStart, indexStart)
	}
	cfg := regions + 24
	l.IndexMemory = le.Uint32(b[cfg:])
	l.SparseIndex = b[cfg+8] != 0
	crcAt := cfg + 9
	if len(b) >= crcAt+4 {
		if want, got := le.Uint32(b[crcAt:]), vdoChecksum(b[:crcAt]); want != got {
			return nil, fmt.Errorf("vdo geometry: checksum %#x, computed %#x", want, got)
		}
	}
	l.Index = BlockRange{First: indexStart - l.BioOffset, Last: dataStart - 1 - l.BioOffset}
	l.SuperBlock = BlockRange{First: dataStart - l.BioOffset, Last: dataStart - l.BioOffset}
	return l, nil
}

// decodeVDOSuperBlock fills l (from decodeVDOGeometry) with the partitions
// and configuration of the super block.
func decodeVDOSuperBlock(b []byte, l *VDOLayout) error {
	le := binary.LittleEndian
	if len(b) < 0x91+4*25 {
		return fmt.Errorf("vdo super block: %d bytes, too short", len(b))
	}
	if id, major := le.Uint32(b[0:]), le.Uint32(b[4:]); id != 0 || major != 12 {
		return fmt.Errorf("vdo super block: header id %d version %d, want id 0 version 12", id, major)
	}
	if size := le.Uint64(b[0x0C:]); size+16 <= uint64(len(b))-4 {
		// The checksum follows the 16-byte header start and size bytes of payload.
		at := int(size) + 16
		if want, got := le.Uint32(b[at:]), vdoChecksum(b[:at]); want != got {
			return fmt.Errorf("vdo super block: checksum %#x, computed %#x", want, got)
		}
	}
	if st := le.Uint32(b[0x28:]); int(st) < len(superBlockStates) {
		l.State = superBlockStates[st]
	} else {
		l.State = fmt.Sprintf("unknown(%d)", st)
	}
	l.LogicalBlocks = le.Uint64(b[0x3C:])
	l.PhysicalBlocks = le.Uint64(b[0x44:])
	l.SlabSize = le.Uint64(b[0x4C:])
	if nonce := le.Uint64(b[0x64:]); nonce != l.Nonce {
		return fmt.Errorf("vdo super block: nonce %#x differs from the geometry's %#x", nonce, l.Nonce)
	}
	n := int(b[0x90])
	if n != 4 {
		return fmt.Errorf("vdo super block: %d partitions, want 4", n)
	}
	seen := 0
	for i := range n {
		off := 0x91 + 25*i
		id := b[off]
		start := le.Uint64(b[off+1:]) - l.BioOffset
		count := le.Uint64(b[off+17:])
		if count == 0 {
			return fmt.Errorf("vdo super block: partition %d is empty", id)
		}
		r := BlockRange{First: start, Last: start + count - 1}
		switch id {
		case 0:
			l.BlockMapRoots = r
		case 1:
			l.SlabDepot = r
		case 2:
			l.Journal = r
		case 3:
			l.Summary = r
		default:
			return fmt.Errorf("vdo super block: unknown partition id %d", id)
		}
		seen |= 1 << id
	}
	if seen != 0xF {
		return errors.New("vdo super block: a partition is listed twice")
	}
	return nil
}

// Default sizes used by vdoformat and LVM; the computed layout assumes them.
const (
	vdoJournalBlocks  = 32768
	vdoSummaryBlocks  = 64
	vdoBlockMapRoots  = 60
	vdoDefaultIndex   = 679127 // dense, 0.25 GB index memory
	vdoDefaultIndexGB = 0xFFFFFF00
)

// computeVDOLayout derives the layout from the physical size and the index
// size, with the default journal, summary and block-map root counts. It is
// a cross-check for the layout read from disk.
func computeVDOLayout(physical, indexBlocks uint64) *VDOLayout {
	if physical < indexBlocks+2+vdoBlockMapRoots+vdoJournalBlocks+vdoSummaryBlocks {
		return nil
	}
	d := 1 + indexBlocks
	l := &VDOLayout{PhysicalBlocks: physical}
	l.Index = BlockRange{First: 1, Last: indexBlocks}
	l.SuperBlock = BlockRange{First: d, Last: d}
	l.BlockMapRoots = BlockRange{First: d + 1, Last: d + vdoBlockMapRoots}
	l.Summary = BlockRange{First: physical - vdoSummaryBlocks, Last: physical - 1}
	l.Journal = BlockRange{First: physical - vdoSummaryBlocks - vdoJournalBlocks, Last: physical - vdoSummaryBlocks - 1}
	l.SlabDepot = BlockRange{First: d + vdoBlockMapRoots + 1, Last: l.Journal.First - 1}
	return l
}
