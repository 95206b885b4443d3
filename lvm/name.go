// Package lvm holds what keel knows of LVM's names: an LV's "vg/lv" name,
// the rule a VG or LV name must follow, and the device-mapper name LVM
// gives the LV; and how to read a string array of LVM's configuration
// (ConfigList). It is pure: no files, no processes, no clock.
package lvm

import (
	"errors"
	"fmt"
	"strings"
)

// Name is an LV's name: the VG it belongs to and the LV's name within it.
// Its text form is "vg/lv" (String, Parse).
type Name struct {
	VG, LV string
}

// maxNameLen is the longest VG or LV name LVM accepts: lvm2's NAME_LEN
// (128) counts the terminating NUL.
const maxNameLen = 127

// ErrInvalidName marks a name Parse refuses.
var ErrInvalidName = errors.New("not a valid VG/LV name")

// ValidName reports whether s is usable as an LVM VG or LV name (and so as
// an argv element of an lvm command): 1 to 127 bytes of A-Z a-z 0-9 + _ . -,
// no leading '-' (LVM joins VG and LV with '-' in device-mapper names), and
// neither "." nor "..". This is lvm2's validate_name (lib/misc/lvm-string.c).
// It does not apply lvm2's further rules for new LV names
// (apply_lvname_restrictions: no "snapshot" or "pvmove" prefix, no
// "_tdata", "_vdata" and like parts), since LVM reports its own sub-LVs
// under such names and keel reads them.
//
// It is a plain loop rather than a regular expression: the equivalent
// pattern's {0,126} repetition was the largest package initialisation of
// every keel process (GODEBUG=inittrace=1).
func ValidName(s string) bool {
	if s == "" || len(s) > maxNameLen || s[0] == '-' || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '+', c == '_', c == '.', c == '-':
		default:
			return false
		}
	}
	return true
}

// Parse reads "vg/lv": exactly one '/', with a VG name and an LV name on
// either side that ValidName accepts. Any other text is refused with an
// error wrapping ErrInvalidName. Names LVM reports for its sub-LVs
// ("vg/pool_tdata") parse; the bracketed display form ("[pool_tdata]") does
// not.
func Parse(s string) (Name, error) {
	n := Split(s)
	if !ValidName(n.VG) || !ValidName(n.LV) {
		return Name{}, fmt.Errorf("%q: %w", s, ErrInvalidName)
	}
	return n, nil
}

// Split splits s at its first '/' as strings.Cut does, without checking
// either part: "vg" gives Name{VG: "vg"}, "vg/a/b" gives LV "a/b". It is
// for names keel already holds as "vg/lv" (the keys of the observed model,
// objects of findings); text from outside goes through Parse.
func Split(s string) Name {
	vg, lv, _ := strings.Cut(s, "/")
	return Name{VG: vg, LV: lv}
}

// String returns "vg/lv".
func (n Name) String() string { return n.VG + "/" + n.LV }

// DMPrefix is how the device-mapper names of the LVs of vg begin: the VG
// name with each '-' doubled, then '-' ("vdo-lab" gives "vdo--lab-").
// Layered devices ("vg-pool-vpool") begin the same way.
func DMPrefix(vg string) string { return Name{VG: vg}.DMName() }

// DMName returns the device-mapper name LVM gives the LV: VG and LV with
// each '-' doubled, joined by '-' ("t-vg/del-vm-1" gives
// "t--vg-del--vm--1"), as lvm2's dm_build_dm_name (libdm/libdm-common.c)
// builds it without a layer. A layer device appends "-" and the layer
// ("vg-pool-vpool" for a VDO pool's vpool).
//
// It runs once per LV on every probe, so it allocates the result only.
func (n Name) DMName() string {
	var b strings.Builder
	b.Grow(len(n.VG) + len(n.LV) + 1 + strings.Count(n.VG, "-") + strings.Count(n.LV, "-"))
	writeDMEscaped(&b, n.VG)
	b.WriteByte('-')
	writeDMEscaped(&b, n.LV)
	return b.String()
}

// DMPath returns the LV's device-mapper node: "/dev/mapper/" and DMName.
func (n Name) DMPath() string { return "/dev/mapper/" + n.DMName() }

// The layers lvm2 puts under a pool's public device (lv_layer in
// lib/metadata/lv.c): a thin pool in use keeps its thin-pool table in the
// "tpool" layer, a VDO pool its dm-vdo table in the "vpool" layer.
const (
	LayerThinPool = "tpool"
	LayerVDOPool  = "vpool"
)

// DMLayerName returns the device-mapper name of layer under the LV whose
// device-mapper name is dm: dm, "-" and the layer, as dm_build_dm_name
// (libdm/libdm-common.c) joins them ("vg-pool-vpool").
func DMLayerName(dm, layer string) string { return dm + "-" + layer }

// writeDMEscaped writes s to b with each '-' doubled.
func writeDMEscaped(b *strings.Builder, s string) {
	for {
		i := strings.IndexByte(s, '-')
		if i < 0 {
			b.WriteString(s)
			return
		}
		b.WriteString(s[:i+1])
		b.WriteByte('-')
		s = s[i+1:]
	}
}

// DMUUID returns the device-mapper UUID LVM gives a top-level LV: "LVM-"
// and the VG's and the LV's UUIDs without the dashes of their display form
// (lvm2 lib/misc/lvm-string.c, build_dm_uuid: UUID_PREFIX and the LV's
// lvid, the two raw ids; the layer suffix it adds to internal LVs is left
// out). udev links it as /dev/disk/by-id/dm-uuid-<it>.
func DMUUID(vgUUID, lvUUID string) string { return string(AppendDMUUID(nil, vgUUID, lvUUID)) }

// AppendDMUUID appends DMUUID(vgUUID, lvUUID) to buf.
func AppendDMUUID(buf []byte, vgUUID, lvUUID string) []byte {
	buf = append(append(append(buf, "LVM-"...), vgUUID...), lvUUID...)
	// The dashes are squeezed out in place: one copy of each UUID, where
	// an append per byte costs twice as much for a check of thousands of
	// VM disks.
	j := len(buf) - len(vgUUID) - len(lvUUID)
	for i := j; i < len(buf); i++ {
		if c := buf[i]; c != '-' {
			buf[j] = c
			j++
		}
	}
	return buf[:j]
}
