package plan

import (
	"fmt"
	"strings"
	"testing"

	"github.com/keel-storage/keel/probes/model"
)

// LVM compares a pool's bill with the memory available when it creates or
// activates it (check_vdo_constrains, lib/metadata/vdo_manip.c), not with
// MemTotal: a pool to create that fits in MemTotal but not in what LVM
// counts as available is refused by lvcreate, so keel reports it.
func TestVDOMemoryComparesWithLVMAvailable(t *testing.T) {
	h := replayHost(t, "vdo-defaults")
	d := loadDesired(t, "vdo-memory", h)
	r := Plan(d, h)
	avail := h.Memory.AvailableBytes >> 20 // SwapFree is 0 in the capture
	if got := lvmAvailableMiB(h.Memory); got != avail {
		t.Fatalf("lvmAvailableMiB = %d, want MemAvailable %d MiB (no swap)", got, avail)
	}
	var f *Finding
	for i := range r.Findings {
		if r.Findings[i].ID == "vdo.memory" {
			f = &r.Findings[i]
		}
	}
	if f == nil {
		t.Fatalf("no vdo.memory; findings: %v", ids(r.Findings))
	}
	// 38 fixed + 150 cache + 2 logical (1G, one started TiB) + 1072
	// physical (268 per TiB x 4) + 1024 index.
	if f.Observed != "2286 MiB" || f.Expected != fmt.Sprintf("at most %d MiB", avail) {
		t.Errorf("vdo.memory observed %q expected %q, want 2286 MiB against %d MiB available", f.Observed, f.Expected, avail)
	}
	if !strings.Contains(f.Message, "vdobig/bigpool 2286 MiB (lvcreate)") || strings.Contains(f.Message, "vdodef/vdopool") {
		t.Errorf("message names the wrong pools: %s", f.Message)
	}
}

func ids(fs []Finding) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = string(f.ID) + "@" + f.Object
	}
	return out
}

// LVM adds two thirds of the anonymous and shared pages to MemAvailable, at
// most two thirds of the free swap (_get_memory_info).
func TestLVMAvailableMemory(t *testing.T) {
	const mib = 1 << 20
	for _, tt := range []struct {
		m    model.Memory
		want uint64
	}{
		{model.Memory{AvailableBytes: 1000 * mib, AnonBytes: 300 * mib, ShmemBytes: 0, SwapFreeBytes: 0}, 1000},
		{model.Memory{AvailableBytes: 1000 * mib, AnonBytes: 300 * mib, ShmemBytes: 0, SwapFreeBytes: 3000 * mib}, 1200},
		{model.Memory{AvailableBytes: 1000 * mib, AnonBytes: 300 * mib, ShmemBytes: 300 * mib, SwapFreeBytes: 300 * mib}, 1200},
	} {
		if got := lvmAvailableMiB(tt.m); got != tt.want {
			t.Errorf("lvmAvailableMiB(%+v) = %d, want %d", tt.m, got, tt.want)
		}
	}
}
