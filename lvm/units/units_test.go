package units

import (
	"errors"
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
	}{
		{"0", 0},
		{"4096", 4096},
		{"512b", 512},
		{"512B", 512},
		{"8s", 4096},
		{"8S", 4096},
		{"1k", 1024},
		{"1K", 1024},
		{"1KiB", 1024},
		{"1kib", 1024},
		{"128m", 128 << 20},
		{"128M", 128 << 20},
		{"128MiB", 128 << 20},
		{"40G", 40 << 30},
		{"40g", 40 << 30},
		{"40GiB", 40 << 30},
		{" 40G ", 40 << 30},
		{"40 G", 40 << 30},
		{"2T", 2 << 40},
		{"2TiB", 2 << 40},
		{"1P", 1 << 50},
		{"1PiB", 1 << 50},
		{"1E", 1 << 60},
		{"15E", 15 << 60},
		{"1.5G", 3 << 29},
		{"0.25G", 256 << 20},
		{"0.5g", 512 << 20},
		{".5K", 512},
		{"2.", 2},
		{"1.00000000001k", 1024}, // 1024.00000001024 rounds down
		{"0.0005k", 1},           // 0.512 rounds up
		{"0.00048828125k", 1},    // exactly 0.5 rounds half up
		{"18446744073709551615", 18446744073709551615},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if err != nil {
			t.Errorf("ParseSize(%q): %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("ParseSize(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestParseSizeErrors(t *testing.T) {
	tests := []struct {
		in      string
		wantMsg string
	}{
		{"", "empty"},
		{"   ", "empty"},
		{"-1G", "negative"},
		{"-1", "negative"},
		{"G", "no number"},
		{"12Q", `unknown unit "Q"`},
		{"1GB", `ambiguous`},
		{"1MB", `write "M" or "MiB"`},
		{"1.2.3G", "malformed"},
		{".", "malformed"},
		{"16E", "exceeds"},
		{"18446744073709551616", "out of range"},
		{"99999999999999999999999G", "out of range"},
		{"15.99999999999999999999999E", "exceeds"},
		{"1e3", "unknown unit"},
		{"0x10", "unknown unit"},
		{"1 G B", "unknown unit"},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", tt.in, got)
			continue
		}
		if !errors.Is(err, ErrSize) {
			t.Errorf("ParseSize(%q): error %v does not wrap ErrSize", tt.in, err)
		}
		if !strings.Contains(err.Error(), tt.wantMsg) {
			t.Errorf("ParseSize(%q): error %q does not mention %q", tt.in, err, tt.wantMsg)
		}
		if !strings.Contains(err.Error(), "\""+tt.in+"\"") && !strings.Contains(err.Error(), strings.TrimSpace(tt.in)) {
			t.Errorf("ParseSize(%q): error %q does not name the value", tt.in, err)
		}
	}
}

func TestFormatSize(t *testing.T) {
	tests := []struct {
		in   uint64
		want string
	}{
		{0, "0B"},
		{512, "512B"},
		{1023, "1023B"},
		{1024, "1K"},
		{1536, "1.50k"},
		{128 << 20, "128M"},
		{40 << 30, "40G"},
		{1536 << 20, "1.50g"},
		{336555 * 4096, "1.28g"},
		{5063921664, "<4.72g"},
		{1 << 40, "1T"},
		{16 << 40, "16T"},
		{1 << 60, "1E"},
		// lvs's "<": the two decimals round up, so the size is below what
		// they say (dm_size_to_string's own example: 2043M is <2.00g).
		{2043 << 20, "<2.00g"},
		{18446744073709551615, "<16.00e"},
		{(1<<30)*128/100 + 1, "1.28g"}, // rounded down: no "<"
	}
	for _, tt := range tests {
		if got := FormatSize(tt.in); got != tt.want {
			t.Errorf("FormatSize(%d) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// Exact forms printed by FormatSize read back to the same number of bytes.
func TestFormatParseRoundTrip(t *testing.T) {
	for _, n := range []uint64{0, 1, 1023, 1024, 4096, 128 << 20, 40 << 30, 3 << 40, 7 << 50, 15 << 60} {
		s := FormatSize(n)
		got, err := ParseSize(s)
		if err != nil || got != n {
			t.Errorf("ParseSize(FormatSize(%d) = %q) = %d, %v", n, s, got, err)
		}
	}
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"40G", "1.5T", "128MiB", "-1G", "12Q", "", "0.25g", "18446744073709551615", "16E", "8s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil {
			if !errors.Is(err, ErrSize) {
				t.Fatalf("ParseSize(%q): error %v does not wrap ErrSize", s, err)
			}
			return
		}
		out := FormatSize(n)
		if strings.Contains(out, ".") {
			return // rounded for humans
		}
		back, err := ParseSize(out)
		if err != nil || back != n {
			t.Fatalf("ParseSize(%q) = %d; FormatSize = %q; reparsed %d, %v", s, n, out, back, err)
		}
	})
}
