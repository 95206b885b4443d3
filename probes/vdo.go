package probes

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"

	"github.com/keel-storage/keel/probes/model"
)

// parseVDOTable parses the arguments of a vdo table line (after "vdo").
func parseVDOTable(length uint64, args string) (*model.VDOTable, error) {
	f := strings.Fields(args)
	if len(f) < 6 {
		return nil, fmt.Errorf("dmsetup table: vdo: %d fields, want at least 6", len(f))
	}
	t := &model.VDOTable{Version: f[0], LogicalSectors: length, StorageDevice: f[1], Options: map[string]string{},
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

// parseVDOStats parses the output of `dmsetup message <dev> 0 stats`: one
// line of nested "{ key : value, sub : { ... }, }".
func parseVDOStats(b []byte) (*model.VDOStats, error) {
	vals := map[string]string{}
	p := statsParser{s: strings.TrimSpace(string(b))}
	if err := p.object("", vals); err != nil {
		return nil, fmt.Errorf("dmsetup message stats: %w", err)
	}
	st := &model.VDOStats{Values: vals, Mode: vals["mode"]}
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
func decodeVDOGeometry(b []byte) (*model.VDOLayout, error) {
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
	l := &model.VDOLayout{Nonce: le.Uint64(b[0x20:])}
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
	l.Index = model.BlockRange{First: indexStart - l.BioOffset, Last: dataStart - 1 - l.BioOffset}
	l.SuperBlock = model.BlockRange{First: dataStart - l.BioOffset, Last: dataStart - l.BioOffset}
	return l, nil
}

// decodeVDOSuperBlock fills l (from decodeVDOGeometry) with the partitions
// and configuration of the super block.
func decodeVDOSuperBlock(b []byte, l *model.VDOLayout) error {
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
		r := model.BlockRange{First: start, Last: start + count - 1}
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
func computeVDOLayout(physical, indexBlocks uint64) *model.VDOLayout {
	if physical < indexBlocks+2+vdoBlockMapRoots+vdoJournalBlocks+vdoSummaryBlocks {
		return nil
	}
	d := 1 + indexBlocks
	l := &model.VDOLayout{PhysicalBlocks: physical}
	l.Index = model.BlockRange{First: 1, Last: indexBlocks}
	l.SuperBlock = model.BlockRange{First: d, Last: d}
	l.BlockMapRoots = model.BlockRange{First: d + 1, Last: d + vdoBlockMapRoots}
	l.Summary = model.BlockRange{First: physical - vdoSummaryBlocks, Last: physical - 1}
	l.Journal = model.BlockRange{First: physical - vdoSummaryBlocks - vdoJournalBlocks, Last: physical - vdoSummaryBlocks - 1}
	l.SlabDepot = model.BlockRange{First: d + vdoBlockMapRoots + 1, Last: l.Journal.First - 1}
	return l
}
