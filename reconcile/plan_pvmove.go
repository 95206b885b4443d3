package reconcile

import (
	"fmt"
	"slices"
	"strings"

	"github.com/keel-storage/keel/probes"
)

// phaseResume puts the resumption of an interrupted pvmove before every
// other change of its VG: the LVs it moves are locked and their extents
// mirrored until it ends, and the planner cannot place a split pool's
// journal on a PV while it sits on the pvmove's mirror.
const phaseResume = 5

// planPvmove finds, in declared VG vg, the moves a pvmove left half-done.
// pvmove copies through a temporary mirror LV (named pvmove<N>, lv_attr
// 'p') and commits the new layout only when the copy ends; a pvmove killed
// or crashed before that leaves the mirror LV in the VG's metadata, the
// moved LVs locked, and nobody polling it (lvmpolld, where it runs, keeps
// polling a killed command's move, but a crash or a host without it does
// not). keel resumes it rather than abort it: lvm2 restarts such a move
// itself when the VG is activated with polling on (the default) and
// documents "run pvmove again ... to restart any operations that were in
// progress from the last checkpoint" (pvmove(8)); for keel's own move of a
// split pool's journal, finishing it is the desired layout, where an abort
// would put the journal back on the slow PV for the next pass to move
// again. The command names the source PV: lvm2's tools/pvmove.c restarts the
// move whose segments read from that PV ("Detected pvmove in progress") and
// ignores the other arguments; the source is the first area of each segment
// of the mirror LV (find_pvmove_lv in lib/metadata/mirror.c).
func (p *planner) planPvmove(vg string) {
	if p.pvmoves == nil {
		p.pvmoves = []*probes.LV{}
		for _, key := range p.sortedLVKeys() {
			if lv := p.h.LVs[key]; len(lv.Attr) > 0 && lv.Attr[0] == 'p' {
				p.pvmoves = append(p.pvmoves, lv)
			}
		}
	}
	for _, lv := range p.pvmoves {
		if lv.VG != vg {
			continue
		}
		src := pvmoveSources(lv)
		moving := p.movedBy(lv)
		var cmds [][]string // one pvmove per source PV resumes the move
		for _, pv := range src {
			cmds = append(cmds, []string{"pvmove", pv})
		}
		remedy := "pvmove" // with no argument: every interrupted move of the host
		if len(cmds) > 0 {
			remedy = shellAnd(cmds)
		}
		key := p.add(Finding{ID: "vg.pvmove_interrupted", Object: lv.FullName,
			Message: fmt.Sprintf("a pvmove in VG %s did not finish (%s is still there): the LVs it moves (%s) stay locked on a temporary mirror until it is resumed, or rolled back with %s",
				vg, lv.FullName, orNone(moving), abortCommand(src)),
			Expected: "no pvmove in progress", Observed: fmt.Sprintf("%s copying from %s", lv.FullName, orNone(src)),
			Remedy: remedy,
		})
		if len(src) == 0 {
			p.reportOnly("vg.pvmove_interrupted", lv.FullName, "the source PV of the move is not known: resume it with pvmove (no argument) or roll it back with pvmove --abort", key)
			continue
		}
		p.act(phaseResume, Action{ID: "vg.pvmove_interrupted:" + lv.FullName, Kind: KindCommand, Class: Live, Object: lv.FullName,
			Summary:  fmt.Sprintf("resume the interrupted pvmove %s from its last checkpoint (source %s)", lv.FullName, strings.Join(src, ", ")),
			Commands: cmds, Remedies: []string{key}})
	}
}

// pvmoveSources returns the PVs a pvmove LV copies from: the first area of
// each of its segments, sorted and without repeats.
func pvmoveSources(lv *probes.LV) []string {
	var out []string
	for _, seg := range lv.Segments {
		if len(seg.Devices) > 0 && seg.Devices[0].IsPV {
			out = append(out, seg.Devices[0].Name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// movedBy lists the LVs with a segment on the pvmove LV.
func (p *planner) movedBy(mv *probes.LV) []string {
	var out []string
	for _, key := range p.sortedLVKeys() {
		lv := p.h.LVs[key]
		if lv.VG != mv.VG || lv == mv {
			continue
		}
		for _, seg := range lv.Segments {
			if slices.ContainsFunc(seg.Devices, func(d probes.SegmentDev) bool { return !d.IsPV && d.Name == mv.Name }) {
				out = append(out, lv.FullName)
				break
			}
		}
	}
	return out
}

// abortCommand is the command that rolls the move back instead.
func abortCommand(src []string) string {
	if len(src) == 0 {
		return "pvmove --abort"
	}
	return probes.ShellJoin([]string{"pvmove", "--abort", src[0]})
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none found"
	}
	return strings.Join(s, ", ")
}
