package plan

import (
	"slices"
	"testing"
)

// The UDS index states dm-vdo reports (index_state_to_string in
// drivers/md/dm-vdo/dedupe.c): only "opening", which every start of a pool
// passes through, is info; every other state but online is vdo.index.
func TestVDOIndexStates(t *testing.T) {
	for _, c := range []struct {
		state string
		want  []FindingID // index findings of fvg/vpool
	}{
		{"online", nil},
		{"opening", []FindingID{"vdo.index_opening"}},
		{"closing", []FindingID{"vdo.index"}},
		{"closed", []FindingID{"vdo.index"}},
		{"offline", []FindingID{"vdo.index"}},
		{"error", []FindingID{"vdo.index"}},
		{"suspended", []FindingID{"vdo.index"}},
		{"unknown", []FindingID{"vdo.index"}},
	} {
		t.Run(c.state, func(t *testing.T) {
			h := replayHost(t, "fault-base")
			pool := h.VDOPools["fvg/vpool"]
			if pool == nil || pool.Status == nil || pool.Table == nil || !pool.Table.Deduplication {
				t.Fatal("capture fault-base lacks the deduplicating pool fvg/vpool")
			}
			pool.Status.IndexState = c.state
			r := Plan(loadDesired(t, "faults", h), h)
			var got []FindingID
			for _, f := range r.Findings {
				if f.ID == "vdo.index" || f.ID == "vdo.index_opening" {
					got = append(got, f.ID)
					if f.Observed != c.state {
						t.Errorf("%s observed %q, want %q", f.ID, f.Observed, c.state)
					}
				}
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("index %s: findings %q, want %q", c.state, got, c.want)
			}
		})
	}
}
