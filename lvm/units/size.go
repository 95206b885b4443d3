package units

import (
	"fmt"
	"strconv"
)

// SectorSize is the unit LVM counts sizes in: a size argument in bytes
// that is not a whole number of sectors is refused ("Size is not a multiple
// of 512", lvm2 tools/lvmcmdline.c _size_arg).
const SectorSize = 512

// Size is a size field of the desired state, decoded once: the text as
// written and the bytes it denotes. A text ParseSize refuses decodes
// without error and keeps it in Err, so that schema's checks report it with
// the field's position; every other user reads Bytes.
type Size struct {
	Text  string
	Bytes uint64
	err   error
}

// NewSize parses s into a Size; an unparsable s gives a Size whose Err is set.
func NewSize(s string) Size {
	n, err := ParseSize(s)
	return Size{Text: s, Bytes: n, err: err}
}

// BytesSize is the Size of n bytes, written in its exact LVM form.
func BytesSize(n uint64) Size { return Size{Text: LVMArg(n), Bytes: n} }

// UnmarshalText implements encoding.TextUnmarshaler (CUE's Decode and
// encoding/json use it); an empty text is an unset Size.
func (s *Size) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*s = Size{}
		return nil
	}
	*s = NewSize(string(b))
	return nil
}

// MarshalText implements encoding.TextMarshaler: the text as written.
func (s Size) MarshalText() ([]byte, error) { return []byte(s.Text), nil }

// IsSet reports whether the field was given.
func (s Size) IsSet() bool { return s.Text != "" }

// Err is why the text is not a size, or nil.
func (s Size) Err() error { return s.err }

// String returns the text as written.
func (s Size) String() string { return s.Text }

// LVMArg is the size as an LVM size argument with an explicit unit (see
// LVMArg).
func (s Size) LVMArg() string { return LVMArg(s.Bytes) }

// LVMArg writes n bytes for an LVM size option (-L, -V, --chunksize,
// --poolmetadatasize, lvextend -L …) always with a unit, since a bare number
// means MiB to -L and --poolmetadatasize but KiB to --chunksize (lvcreate(8)):
// the largest of K, M, G, T, P, E (1024-based whatever the case, lvm2
// tools/lvmcmdline.c) that divides n exactly, else bytes with "b" ("2G",
// "64K", "1536b"). LVM refuses a byte count that is not a multiple of 512;
// keel vet refuses such sizes before they get here.
func LVMArg(n uint64) string {
	for _, u := range units {
		if n != 0 && n%u.factor == 0 {
			return strconv.FormatUint(n/u.factor, 10) + u.upper
		}
	}
	return strconv.FormatUint(n, 10) + "b"
}

// CheckLVMSize says why a size cannot be handed to LVM: zero, or not a
// whole number of 512-byte sectors (LVM refuses a byte count that is not one,
// and a unit size such as "0.3k" would be truncated).
func CheckLVMSize(n uint64) error {
	switch {
	case n == 0:
		return fmt.Errorf("size is zero: %w", ErrSize)
	case n%SectorSize != 0:
		lo := n / SectorSize * SectorSize
		if lo == 0 {
			return fmt.Errorf("%d bytes is below one %d-byte sector; LVM counts sizes in sectors: %w", n, SectorSize, ErrSize)
		}
		return fmt.Errorf("%d bytes is not a whole number of %d-byte sectors; write %s or %s: %w",
			n, SectorSize, LVMArg(lo), LVMArg(lo+SectorSize), ErrSize)
	}
	return nil
}
