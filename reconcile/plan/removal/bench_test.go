package removal

import (
	"strings"
	"testing"
)

// BenchmarkPlanScale plans the removal of every LV of vdovg on the guest's
// 2,000-LV host (probes/testdata/scale/scale-vdo: vdovg stacked on the VDO
// LV vdolab/vdolv) in discard mode: each target looks at the PVs under its
// own segments to choose how it is cleared.
func BenchmarkPlanScale(b *testing.B) {
	h := snapshotHost(b, "../../../probes/testdata/scale/scale-vdo.txtar.gz")
	var names []string
	for key, lv := range h.LVs {
		if lv.VG == "vdovg" && !lv.Hidden {
			names = append(names, key)
		}
	}
	if len(names) < 2000 {
		b.Fatalf("%d LVs in vdovg, want the capture's 2,000", len(names))
	}
	decl := Declared{"vdovg": nil}
	b.ReportAllocs()
	for b.Loop() {
		targets, err := Plan(h, decl, Request{Names: names, Mode: ModeDiscard})
		if err != nil && !strings.Contains(err.Error(), "refused") {
			b.Fatal(err)
		}
		_ = targets
	}
}
