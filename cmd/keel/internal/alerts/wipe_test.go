package alerts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWipeProgressMetrics(t *testing.T) {
	m := NewMetrics()
	path := filepath.Join(t.TempDir(), "keel.prom")
	done := uint64(1 << 30)
	m.WipeStarted("vms", "vm-100-disk-0", func() (uint64, uint64, float64) { return done, 4 << 30, 512 << 20 })
	if n := m.WipesInFlight(); n != 1 {
		t.Fatalf("wipes in flight %d, want 1", n)
	}
	read := func() string {
		t.Helper()
		if err := m.WriteTextfile(path); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	text := read()
	for _, want := range []string{
		`keel_wipe_done_bytes{lv="vm-100-disk-0",vg="vms"} 1.073741824e+09`,
		`keel_wipe_size_bytes{lv="vm-100-disk-0",vg="vms"} 4.294967296e+09`,
		`keel_wipe_bytes_per_second{lv="vm-100-disk-0",vg="vms"} 5.36870912e+08`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("textfile lacks %s:\n%s", want, text)
		}
	}
	// The progress is read at every write, not copied at the start.
	done = 2 << 30
	if text = read(); !strings.Contains(text, `keel_wipe_done_bytes{lv="vm-100-disk-0",vg="vms"} 2.147483648e+09`) {
		t.Errorf("progress not re-read:\n%s", text)
	}
	m.WipeFinished("vms", "vm-100-disk-0")
	if text = read(); strings.Contains(text, "keel_wipe_done_bytes{") || m.WipesInFlight() != 0 {
		t.Errorf("finished wipe still published:\n%s", text)
	}
}
