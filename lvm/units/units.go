// Package units parses and prints the sizes that keel's desired state and
// LVM use: "40G", "128M", "1.5T", "512KiB".
//
// The suffixes are LVM's binary ones as lvcreate -L reads them: k, m, g, t, p,
// e (either case) are powers of 1024, s is a 512-byte sector and b is a byte;
// the IEC spellings KiB, MiB, GiB, TiB, PiB and EiB mean the same powers of
// 1024. Two deliberate differences from lvcreate:
//
//   - A bare number is bytes (lvcreate -L reads a bare number as MiB). keel's
//     desired state is explicit, so "40" cannot silently mean 40 MiB.
//   - Two-letter SI spellings such as "MB" or "GB" are rejected: LVM prints
//     "MB" for 10^6 in its --units output but lvcreate does not accept it, so
//     a value written that way is ambiguous. The error suggests "M" or "MiB".
//
// Decimals ("1.5G") are accepted as lvcreate accepts them and rounded to the
// nearest byte.
package units

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"strconv"
	"strings"
)

// Binary units, in bytes.
const (
	KiB uint64 = 1 << 10
	MiB uint64 = 1 << 20
	GiB uint64 = 1 << 30
	TiB uint64 = 1 << 40
	PiB uint64 = 1 << 50
	EiB uint64 = 1 << 60
)

// ErrSize is wrapped by every error ParseSize returns.
var ErrSize = errors.New("invalid size")

// multipliers maps a lower-cased suffix to its factor in bytes.
var multipliers = map[string]uint64{
	"":  1,
	"b": 1,
	"s": 512,
	"k": KiB, "kib": KiB,
	"m": MiB, "mib": MiB,
	"g": GiB, "gib": GiB,
	"t": TiB, "tib": TiB,
	"p": PiB, "pib": PiB,
	"e": EiB, "eib": EiB,
}

// ParseSize returns the number of bytes s denotes. Surrounding blanks are
// ignored. Errors wrap ErrSize and quote s.
func ParseSize(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("size %q: empty: %w", s, ErrSize)
	}
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, suffix := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	if num == "" {
		if strings.HasPrefix(t, "-") {
			return 0, fmt.Errorf("size %q: negative: %w", s, ErrSize)
		}
		return 0, fmt.Errorf("size %q: no number: %w", s, ErrSize)
	}
	mult, ok := multipliers[suffix]
	if !ok {
		switch suffix {
		case "kb", "mb", "gb", "tb", "pb", "eb":
			u := strings.ToUpper(suffix[:1])
			return 0, fmt.Errorf("size %q: %q is ambiguous (SI or binary); write %q or %q: %w",
				s, t[i:], u, u+"iB", ErrSize)
		}
		return 0, fmt.Errorf("size %q: unknown unit %q (use b, s, k, m, g, t, p, e or KiB..EiB): %w",
			s, t[i:], ErrSize)
	}
	if strings.Count(num, ".") > 1 || num == "." {
		return 0, fmt.Errorf("size %q: malformed number %q: %w", s, num, ErrSize)
	}
	if !strings.Contains(num, ".") {
		n, err := strconv.ParseUint(num, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("size %q: out of range: %w", s, ErrSize)
		}
		hi, lo := mul64(n, mult)
		if hi != 0 {
			return 0, fmt.Errorf("size %q: exceeds %d bytes: %w", s, uint64(math.MaxUint64), ErrSize)
		}
		return lo, nil
	}
	// Decimal: exact rational arithmetic, then round half up to a byte.
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return 0, fmt.Errorf("size %q: malformed number %q: %w", s, num, ErrSize)
	}
	r.Mul(r, new(big.Rat).SetUint64(mult))
	q := new(big.Int).Quo(r.Num(), r.Denom())
	rem := new(big.Int).Sub(r.Num(), new(big.Int).Mul(q, r.Denom()))
	if new(big.Int).Mul(rem, big.NewInt(2)).Cmp(r.Denom()) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsUint64() {
		return 0, fmt.Errorf("size %q: exceeds %d bytes: %w", s, uint64(math.MaxUint64), ErrSize)
	}
	return q.Uint64(), nil
}

// MustParseSize is ParseSize for constants in code and tests; it panics on error.
func MustParseSize(s string) uint64 {
	n, err := ParseSize(s)
	if err != nil {
		panic(err)
	}
	return n
}

func mul64(a, b uint64) (hi, lo uint64) {
	if a == 0 || b == 0 {
		return 0, 0
	}
	lo = a * b
	if lo/b != a {
		return 1, lo
	}
	return 0, lo
}

var units = []struct {
	factor uint64
	upper  string
	lower  string
}{
	{EiB, "E", "e"}, {PiB, "P", "p"}, {TiB, "T", "t"},
	{GiB, "G", "g"}, {MiB, "M", "m"}, {KiB, "K", "k"},
}

// FormatSize prints n bytes for humans with 1024-based units. It picks the
// largest unit not above n; when n is a whole number of that unit it prints
// the exact form ParseSize reads back ("40G", "128M", "3K"), otherwise two
// decimals with a lower-case unit as lvs prints them ("40.25g" is exact here
// too, "1.28g" is rounded down), with lvs's "<" when the two decimals round
// up, so that the size is below the number shown ("<2.00g" for 2043M). That
// is dm_size_to_string in lvm2's libdm/libdm-string.c for lvs's default
// units "r": "<" when floor(100*size/unit) differs from nearbyint of it.
// Below 1 KiB it prints bytes ("512B").
func FormatSize(n uint64) string {
	for _, u := range units {
		if n < u.factor {
			continue
		}
		if n%u.factor == 0 {
			return strconv.FormatUint(n/u.factor, 10) + u.upper
		}
		// Hundredths of the unit, exactly: q = floor(100n/factor), rounded
		// to nearest, ties to even, as printf's %.2f rounds.
		hi, lo := bits.Mul64(n, 100)
		q, r := bits.Div64(hi, lo, u.factor)
		prefix := ""
		if 2*r > u.factor || 2*r == u.factor && q%2 == 1 {
			q++
			prefix = "<"
		}
		return fmt.Sprintf("%s%d.%02d%s", prefix, q/100, q%100, u.lower)
	}
	return strconv.FormatUint(n, 10) + "B"
}
