package probes

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/keel-storage/keel/probes/hostio"
)

// The on-disk LVM2 text-format label and metadata area header, as lvm2
// writes them (lib/label/label.h and label.c: the label in one of sectors
// 0-3; lib/format_text/layout.h and format-text.c: pv_header, mda_header,
// raw_locn). Every LVM commit writes the VG's new metadata text into each
// in-use metadata area and then rewrites that area's 512-byte mda_header,
// whose first raw_locn holds the offset, size and checksum of the new text
// (format-text.c, _vg_write_raw and _vg_commit_raw); the text carries the
// VG's seqno, so the header differs after every commit. Reading the label
// and these headers is how the daemon learns that LVM metadata changed
// without running an LVM command (docs/daemon.md, "The change signal").

const (
	labelSectorSize = 512
	labelScanSect   = 4 // LABEL_SCAN_SECTORS: the label is in sector 0, 1, 2 or 3
	mdaHeaderSize   = 512
	// lvmInitialCRC is INITIAL_CRC of lvm2's lib/misc/crc.h.
	lvmInitialCRC = 0xf597a6cf
	// headRead is the first read of a PV: the label sectors and the
	// default first metadata area header (at 4096).
	headRead = 2 * 4096
	// maxAreas bounds the disk_locn lists of a pv_header (LVM writes one
	// data area and at most two metadata areas).
	maxAreas = 8
)

var (
	labelID    = []byte("LABELONE")
	labelType  = []byte("LVM2 001")
	mdaMagic   = []byte(" LVM2 x[5A%r0N*>") // FMTT_MAGIC of layout.h
	errNoLabel = errors.New("no LVM label in sectors 0-3")
)

// lvmCRC is lvm2's calc_crc(INITIAL_CRC, b): the reflected CRC-32
// polynomial of hash/crc32's IEEE table, without its pre and post inversion.
func lvmCRC(b []byte) uint32 {
	return ^crc32.Update(^uint32(lvmInitialCRC), crc32.IEEETable, b)
}

// DiskArea is one disk_locn of a pv_header: a byte range of the PV.
type DiskArea struct {
	Offset uint64 `json:"offset"`
	Size   uint64 `json:"size"`
}

// PVLabel is the LVM2 label of a PV and its pv_header.
type PVLabel struct {
	// Sector is the sector (0-3) holding the label.
	Sector int
	// UUID is the PV UUID as stored (32 characters, without dashes).
	UUID string
	// DevSize is the device size LVM recorded, in bytes.
	DevSize uint64
	// DataAreas and MetadataAreas are the pv_header's two disk_locn lists.
	DataAreas     []DiskArea
	MetadataAreas []DiskArea
	// Raw is the 512-byte label sector.
	Raw []byte
}

// ParseLVMLabel finds and decodes the LVM2 label in b, the first 2 KiB
// (sectors 0-3) of a device. A label whose CRC does not match is an error,
// as it is for LVM (label.c).
func ParseLVMLabel(b []byte) (PVLabel, error) {
	for s := 0; s < labelScanSect && (s+1)*labelSectorSize <= len(b); s++ {
		sec := b[s*labelSectorSize : (s+1)*labelSectorSize]
		if !bytes.Equal(sec[:8], labelID) {
			continue
		}
		le := binary.LittleEndian
		if got := le.Uint64(sec[8:]); got != uint64(s) {
			return PVLabel{}, fmt.Errorf("lvm label in sector %d says sector %d", s, got)
		}
		if want, got := le.Uint32(sec[16:]), lvmCRC(sec[20:]); want != got {
			return PVLabel{}, fmt.Errorf("lvm label in sector %d: checksum %#x, computed %#x", s, want, got)
		}
		if !bytes.Equal(sec[24:32], labelType) {
			return PVLabel{}, fmt.Errorf("lvm label in sector %d: type %q, want %q", s, sec[24:32], labelType)
		}
		off := int(le.Uint32(sec[20:]))
		if off < 32 || off+32+8+16 > labelSectorSize {
			return PVLabel{}, fmt.Errorf("lvm label in sector %d: pv_header offset %d out of the sector", s, off)
		}
		l := PVLabel{Sector: s, UUID: string(sec[off : off+32]), DevSize: le.Uint64(sec[off+32:]),
			Raw: append([]byte(nil), sec...)}
		p := off + 40
		var err error
		if l.DataAreas, p, err = diskAreas(sec, p); err != nil {
			return PVLabel{}, fmt.Errorf("lvm label in sector %d: data areas: %w", s, err)
		}
		if l.MetadataAreas, _, err = diskAreas(sec, p); err != nil {
			return PVLabel{}, fmt.Errorf("lvm label in sector %d: metadata areas: %w", s, err)
		}
		return l, nil
	}
	return PVLabel{}, errNoLabel
}

// diskAreas reads a disk_locn list that ends with an all-zero entry,
// starting at p; it returns the list and the offset after its end.
func diskAreas(sec []byte, p int) ([]DiskArea, int, error) {
	var out []DiskArea
	for {
		if p+16 > len(sec) {
			return nil, p, errors.New("list runs past the sector")
		}
		a := DiskArea{Offset: binary.LittleEndian.Uint64(sec[p:]), Size: binary.LittleEndian.Uint64(sec[p+8:])}
		p += 16
		if a == (DiskArea{}) {
			return out, p, nil
		}
		if len(out) == maxAreas {
			return nil, p, fmt.Errorf("more than %d entries", maxAreas)
		}
		out = append(out, a)
	}
}

// RawLocn is one raw_locn of an mda_header: where the metadata text is in
// the area, its size and checksum.
type RawLocn struct {
	Offset, Size uint64
	Checksum     uint32
	Flags        uint32
}

// MDAHeader is the header of a metadata area.
type MDAHeader struct {
	Version uint32
	// Start and Size are the area's place on the device, in bytes.
	Start, Size uint64
	// Locns are the raw_locns up to the all-zero one: the first is the
	// committed metadata text.
	Locns []RawLocn
}

// ParseMDAHeader decodes the 512-byte mda_header at the start of a
// metadata area, checking its magic and checksum.
func ParseMDAHeader(b []byte) (MDAHeader, error) {
	if len(b) < mdaHeaderSize {
		return MDAHeader{}, fmt.Errorf("mda header: %d bytes, want %d", len(b), mdaHeaderSize)
	}
	b = b[:mdaHeaderSize]
	le := binary.LittleEndian
	if !bytes.Equal(b[4:20], mdaMagic) {
		return MDAHeader{}, fmt.Errorf("mda header: magic %q, want %q", b[4:20], mdaMagic)
	}
	if want, got := le.Uint32(b), lvmCRC(b[4:]); want != got {
		return MDAHeader{}, fmt.Errorf("mda header: checksum %#x, computed %#x", want, got)
	}
	h := MDAHeader{Version: le.Uint32(b[20:]), Start: le.Uint64(b[24:]), Size: le.Uint64(b[32:])}
	for p := 40; p+24 <= len(b); p += 24 {
		r := RawLocn{Offset: le.Uint64(b[p:]), Size: le.Uint64(b[p+8:]), Checksum: le.Uint32(b[p+16:]), Flags: le.Uint32(b[p+20:])}
		if r == (RawLocn{}) {
			break
		}
		h.Locns = append(h.Locns, r)
	}
	return h, nil
}

// MetadataStamp reads, through fsys, the LVM label and every metadata area
// header of the PV at dev, and returns the label sector's bytes and each
// header's raw_locns (or why it does not parse): one 8 KiB read with
// O_DIRECT (a second for a metadata area further in) (DirFS.ReadAt), the way LVM itself reads and writes them
// (lvm2 lib/device/bcache.c opens devices O_DIRECT), so no stale page cache
// hides a commit. The stamp changes whenever LVM commits metadata to the
// PV's VG (each in-use metadata area gets a new header) or relabels the PV;
// a device without a label stamps as "no label". A read that fails (the
// device gone, EIO) is an error naming the device.
func MetadataStamp(fsys hostio.FS, dev string) (string, error) {
	// One read covers the label and, where pvcreate puts it by default, the
	// first metadata area's header at 4 KiB: one system call set per PV.
	head, err := fsys.ReadAt(dev, 0, headRead)
	if err != nil {
		return "", fmt.Errorf("lvm label of %s: %w", dev, err)
	}
	l, err := ParseLVMLabel(head)
	if errors.Is(err, errNoLabel) {
		return "no label", nil
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", dev, err)
	}
	var b bytes.Buffer
	b.Write(l.Raw)
	for _, a := range l.MetadataAreas {
		// The header is 512 bytes at the area's start; O_DIRECT wants 4 KiB
		// alignment (hostio.DirectAlign), so read the aligned block around it.
		base := int64(a.Offset) &^ (hostio.DirectAlign - 1)
		var blk []byte
		if a.Offset+mdaHeaderSize <= uint64(len(head)) {
			blk, base = head, 0
		} else if blk, err = fsys.ReadAt(dev, base, hostio.DirectAlign); err != nil {
			return "", fmt.Errorf("lvm metadata area header of %s at %d: %w", dev, a.Offset, err)
		}
		in := int(int64(a.Offset) - base)
		if in+mdaHeaderSize > len(blk) {
			return "", fmt.Errorf("lvm metadata area header of %s at %d: short read", dev, a.Offset)
		}
		// The committed text's place and checksum, or why the header does
		// not parse (a wiped or half-written area is a change too).
		if h, err := ParseMDAHeader(blk[in : in+mdaHeaderSize]); err != nil {
			fmt.Fprintf(&b, "|%d:%v", a.Offset, err)
		} else {
			fmt.Fprintf(&b, "|%d:%+v", a.Offset, h.Locns)
		}
	}
	return b.String(), nil
}
