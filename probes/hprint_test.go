package probes

import (
	"github.com/keel-storage/keel/probes/model"
	"testing"
)

// Values the guest's bcache sysfs read back (reference test-guest.md §6.4):
// sequential_cutoff 4 MiB and 0, dirty_data after a 63 MiB write.
func TestHprintMatchesGuestReadings(t *testing.T) {
	for v, want := range map[int64]string{0: "0.0k", 4 << 20: "4.0M", 63 << 20: "63.0M", 1000: "0.9k"} {
		if got := model.Hprint(v); got != want {
			t.Errorf("Hprint(%d) = %q, want %q", v, got, want)
		}
		if back, err := parseHumanBytes(model.Hprint(v)); err != nil || (v >= 1024 && back > uint64(v)) {
			t.Errorf("parseHumanBytes(Hprint(%d)) = %d, %v: must parse and never exceed the value", v, back, err)
		}
	}
}
