package plan

import (
	"strings"
	"testing"
)

// A VG on a VDO LV left inactive by a boot: with nothing declared in it
// (vdo-thick-inactive) nothing breaks and nothing is raised, and no remedy
// or action of these plans activates a whole VG (vgchange -ay would start
// every VM disk in it). With a pool declared in the inactive VG
// (stacked-pool-inactive, captured by e2e/remedies) the finding names the
// pool and its remedy activates that pool only.
func TestActivationJudgedByWhatBreaks(t *testing.T) {
	for _, tt := range []struct{ snapshot, desired string }{
		{"vdo-thick-inactive", "vdo-thick"},
		// A maintenance change under vdovg: the frame brings back the
		// LVs that were active, not the whole VG.
		{"vdo-thick", "vdo-thick-drift"},
	} {
		h := replayHost(t, tt.snapshot)
		r := Plan(loadDesired(t, tt.desired, h), h)
		for _, f := range r.Findings {
			if f.ID == "activation.pvscan_on_lvs" {
				t.Errorf("%s: nothing declared in the inactive VG, yet %s on %s: %s", tt.snapshot, f.ID, f.Object, f.Message)
			}
			if strings.Contains(f.Remedy, "vgchange -ay") {
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
	}
	h := replayHost(t, "stacked-pool-inactive")
	r := Plan(loadDesired(t, "stacked-pool", h), h)
	var got []string
	for _, f := range r.Findings {
		if f.ID == "activation.pvscan_on_lvs" {
			got = append(got, f.Object+": "+f.Remedy)
		}
	}
	if want := "upper: lvchange -ay upper/innerlv && keel udev-rules --write"; len(got) != 1 || got[0] != want {
		t.Errorf("stacked-pool-inactive: activation.pvscan_on_lvs %q, want [%q]", got, want)
	}
}
