package plan

import (
	"slices"
	"testing"

	"github.com/keel-storage/keel/schema/spec"
)

func TestWaivers(t *testing.T) {
	h := replayHost(t, "vdo-defaults")
	d := *loadDesired(t, "vdo-defaults-tuned", h)
	base := PlanWith(&d, h, Memory{Today: "2026-12-01"})
	sev := map[string]Severity{}
	for _, f := range base.Findings {
		sev[f.Key()] = f.Severity
	}
	threads, discard := "vdo.threads@vdodef/vdopool", "vdo.max_discard@vdodef/vdopool"
	if sev[threads] != Warning || sev[discard] != Warning || len(settingsActions(base)) == 0 {
		t.Fatalf("the snapshot no longer raises both warnings with an action: %+v", base.Findings)
	}
	w := func(id, expires string) spec.Waiver {
		return spec.Waiver{ID: id, Object: "vdodef/vdopool", Reason: "OPS-1", Expires: expires}
	}
	for _, tc := range []struct {
		name    string
		waivers []spec.Waiver
		today   string
		waived  []string // keys waived (info, Waived set)
		extra   []string // keys of waiver findings
		actions bool     // the vdosettings action is still planned
	}{
		{"one of two: the action stays for the other", []spec.Waiver{w("vdo.threads", "2026-12-31")}, "2026-12-01", []string{threads}, nil, true},
		{"both: no action", []spec.Waiver{w("vdo.threads", "2026-12-31"), w("vdo.max_discard", "2026-12-31")}, "2026-12-01", []string{threads, discard}, nil, false},
		{"holds through its last day", []spec.Waiver{w("vdo.threads", "2026-12-01"), w("vdo.max_discard", "2026-12-01")}, "2026-12-01", []string{threads, discard}, nil, false},
		{"expired the day after", []spec.Waiver{w("vdo.threads", "2026-11-30")}, "2026-12-01", nil, []string{"waiver.expired@" + threads}, true},
		{"no date from the caller: in force", []spec.Waiver{w("vdo.threads", "2000-01-01")}, "", []string{threads}, nil, true},
		{"unknown ID", []spec.Waiver{w("vdo.thread", "2026-12-31")}, "2026-12-01", nil, []string{"waiver.unknown@vdo.thread@vdodef/vdopool"}, true},
		{"another object", []spec.Waiver{{ID: "vdo.threads", Object: "vdodef/other", Reason: "x", Expires: "2026-12-31"}}, "2026-12-01", nil, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dd := d
			dd.Waivers = tc.waivers
			res := PlanWith(&dd, h, Memory{Today: tc.today})
			var waived, extra []string
			for _, f := range res.Findings {
				switch {
				case f.Waived != nil:
					if f.Severity != Info || f.Waived.Severity != sev[f.Key()] || f.Waived.Reason == "" {
						t.Errorf("waived %s: severity %s, waived %+v", f.Key(), f.Severity, f.Waived)
					}
					waived = append(waived, f.Key())
				case f.ID == "waiver.expired" || f.ID == "waiver.unknown":
					if f.Severity != Warning || f.Remedy == "" {
						t.Errorf("%s: %+v", f.Key(), f)
					}
					extra = append(extra, f.Key())
				case f.Severity != sev[f.Key()]:
					t.Errorf("%s changed severity to %s without a waiver", f.Key(), f.Severity)
				}
			}
			slices.Sort(waived)
			want := slices.Clone(tc.waived)
			slices.Sort(want)
			if !slices.Equal(waived, want) || !slices.Equal(extra, tc.extra) {
				t.Errorf("waived %q (want %q), waiver findings %q (want %q)", waived, want, extra, tc.extra)
			}
			if got := len(settingsActions(res)) > 0; got != tc.actions {
				t.Errorf("vdosettings action planned: %v, want %v", got, tc.actions)
			}
			if len(res.Findings) != len(base.Findings)+len(tc.extra) {
				t.Errorf("%d findings, want the %d unwaived ones plus %d: a waived finding must stay visible", len(res.Findings), len(base.Findings), len(tc.extra))
			}
		})
	}
}

// settingsActions are the actions that change the pool's VDO settings.
func settingsActions(res Result) []Action {
	var out []Action
	for _, a := range res.Actions {
		for _, c := range a.Commands {
			if slices.Contains(c, "--vdosettings") {
				out = append(out, a)
			}
		}
	}
	return out
}
