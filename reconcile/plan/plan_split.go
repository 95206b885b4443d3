package plan

import (
	"fmt"
	"sort"
	"strings"

	"github.com/keel-storage/keel/lvm/units"
	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/probes/shell"
)

// isTailRegion tells the recovery journal and slab summary (the last 32832
// blocks of _vdata) from the head regions (index, super block).
func isTailRegion(name string) bool {
	return name == "recovery journal" || name == "slab summary"
}

// checkSplit verifies that a split pool's head and tail sit on the declared
// fast PVs, and plans the pvmove that brings the journal back.
func (p *planner) checkSplit(object string, o observedVDO, fastPaths []string) {
	fast := map[string]bool{}
	var fastOrder []string
	for _, path := range fastPaths {
		if n := p.resolvePV(path); n != "" && !fast[n] {
			fast[n] = true
			fastOrder = append(fastOrder, n)
		}
	}
	if len(fast) == 0 {
		p.add(Finding{ID: VDOLayoutHeadOffFast, Object: object,
			Message:  "none of the declared fast PVs is a PV on this host, so no metadata can be on them",
			Expected: strings.Join(fastPaths, ", "), Observed: "not found",
			Remedy: "check split.fast against the VG's PVs (keel status)",
		})
		return
	}
	var headOff, tailOff []model.PVRange
	var headWhere, tailWhere []string
	for _, r := range o.pool.Regions {
		for _, on := range r.On {
			if fast[on.PV] {
				continue
			}
			where := fmt.Sprintf("%s on %s:%d-%d", r.Name, on.PV, on.FirstPE, on.LastPE)
			if isTailRegion(r.Name) {
				tailOff, tailWhere = append(tailOff, on), append(tailWhere, where)
			} else {
				headOff, headWhere = append(headOff, on), append(headWhere, where)
			}
		}
	}
	fastList := strings.Join(fastOrder, ", ")
	if len(headOff) > 0 {
		key := p.add(Finding{ID: VDOLayoutHeadOffFast, Object: object,
			Message:  "part of the UDS index or super block is on a PV not declared fast",
			Expected: "index and super block on " + fastList, Observed: strings.Join(headWhere, "; "),
			Remedy: "pvmove those extents of " + o.pool.DataLV + " to a fast PV",
		})
		p.reportOnly(VDOLayoutHeadOffFast, object, "move the pool's head to the fast PVs by hand (pvmove)", key)
	}
	if len(tailOff) == 0 {
		return
	}
	ranges := mergeRanges(tailOff)
	need := uint64(0)
	for _, r := range ranges {
		need += r.LastPE - r.FirstPE + 1
	}
	dest, best := "", uint64(0)
	for _, name := range fastOrder {
		pv := p.h.PVs[name]
		free := pv.PECount - min(pv.PEAlloc, pv.PECount)
		if free >= need && dest == "" {
			dest = name
		}
		best = max(best, free)
	}
	msg := "the recovery journal or slab summary left the fast PVs (a grow moves them to the new end of _vdata)"
	var cmds [][]string
	for _, r := range ranges {
		cmds = append(cmds, []string{"pvmove", "-n", o.pool.DataLV, fmt.Sprintf("%s:%d-%d", r.PV, r.FirstPE, r.LastPE), dest})
	}
	remedy := ""
	if dest != "" {
		remedy = "live: " + shell.Lines(cmds)
	} else {
		missing := (need - best) * o.extent
		remedy = fmt.Sprintf("the fast PVs lack %s (%d extents) of free space for the %d extents holding the journal: add fast space, then pvmove",
			units.FormatSize(missing), need-best, need)
	}
	key := p.add(Finding{ID: VDOLayoutJournalOffFast, Object: object,
		Message:  msg,
		Expected: "recovery journal and slab summary on " + fastList, Observed: strings.Join(tailWhere, "; "),
		Remedy: remedy,
	})
	if dest != "" {
		p.act(phaseChange, Action{ID: "vdo.layout.journal_off_fast:" + object, Kind: KindCommand, Class: Live, Object: object,
			Summary:  fmt.Sprintf("move the %d extents holding the recovery journal and slab summary of %s to %s", need, object, dest),
			Commands: cmds, Remedies: []string{key}})
	}
}

// mergeRanges sorts PE ranges and joins overlapping or adjacent ones on the
// same PV.
func mergeRanges(in []model.PVRange) []model.PVRange {
	rs := append([]model.PVRange(nil), in...)
	sort.Slice(rs, func(i, j int) bool {
		if rs[i].PV != rs[j].PV {
			return rs[i].PV < rs[j].PV
		}
		return rs[i].FirstPE < rs[j].FirstPE
	})
	var out []model.PVRange
	for _, r := range rs {
		if n := len(out); n > 0 && out[n-1].PV == r.PV && r.FirstPE <= out[n-1].LastPE+1 {
			out[n-1].LastPE = max(out[n-1].LastPE, r.LastPE)
			continue
		}
		out = append(out, r)
	}
	return out
}
