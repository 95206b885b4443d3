package reconcile

import (
	"strings"
	"testing"
)

// A VG on a VDO LV left inactive by a boot: with nothing declared in it
// (vdo-thick-inactive) nothing breaks and nothing is raised; with a pool
// declared in it (stacked-pool-inactive, captured by e2e/remedies)
// activation.pvscan_on_lvs names the pool, and no remedy of either plan
// activates a whole VG (vgchange -ay would start every VM disk in it).
func TestActivationJudgedByWhatBreaks(t *testing.T) {
	for _, tt := range []struct {
		snapshot, desired string
		raised            bool
	}{
		{"vdo-thick-inactive", "vdo-thick", false},
		// A maintenance change under vdovg: the frame brings back the
		// LVs that were active, not the whole VG.
		{"vdo-thick", "vdo-thick-drift", false},
		{"stacked-pool-inactive", "stacked-pool", true},
	} {
		h := replayHost(t, tt.snapshot)
		r := Plan(loadDesired(t, tt.desired, h), h)
		var got []Finding
		for _, f := range r.Findings {
			if f.ID == "activation.pvscan_on_lvs" {
				got = append(got, f)
			}
			if strings.Contains(f.Remedy, "vgchange -ay") || strings.Contains(f.Remedy, "vgchange -a y") {
				t.Errorf("%s: %s remedy activates a whole VG: %s", tt.snapshot, f.ID, f.Remedy)
			}
		}
		for _, a := range r.Actions {
			for _, c := range a.Commands {
				if len(c) > 1 && c[0] == "vgchange" && c[1] == "-ay" {
					t.Errorf("%s: action %s activates a whole VG: %v", tt.snapshot, a.ID, c)
				}
			}
		}
		switch {
		case !tt.raised && len(got) != 0:
			t.Errorf("%s: nothing declared in the inactive VG, yet %v", tt.snapshot, got)
		case tt.raised && len(got) != 1:
			t.Errorf("%s: want one activation.pvscan_on_lvs, got %v", tt.snapshot, got)
		case tt.raised && got[0].Remedy != "lvchange -ay upper/innerlv && keel udev-rules --write":
			t.Errorf("%s: remedy %q, want the declared pool only and keel's udev rule", tt.snapshot, got[0].Remedy)
		}
	}
}
