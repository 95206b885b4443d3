package schema

import (
	"os"
	"path/filepath"
	"testing"
)

// sequentialCutoff takes a size string like every size in the schema, and a
// number of bytes as before; both decode to the same byte count.
func TestBcacheSequentialCutoffSizes(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  int64
	}{
		{`"4M"`, 4 << 20},
		{`4194304`, 4 << 20},
		{`"0"`, 0},
		{`0`, 0},
		{`"1.5k"`, 1536},
	} {
		p := filepath.Join(t.TempDir(), "b.cue")
		src := `bcache: bcache0: {backing: "/dev/sda", sequentialCutoff: ` + tc.value + "}\n"
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := Load(p)
		if err != nil {
			t.Fatalf("%s: %v", tc.value, err)
		}
		got := cfg.Bcache["bcache0"].SequentialCutoff
		if got == nil || *got != tc.want {
			t.Errorf("sequentialCutoff: %s decoded to %v, want %d", tc.value, got, tc.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"maxdiscrad", "maxdiscard", 1}, // two letters swapped
		{"virtualsize", "virtualsize", 0},
		{"create2", "create", 1},
		{"volumegroup", "volumegroups", 1},
		{"lvm", "alerts", 5},
	} {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
