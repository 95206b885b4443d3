package state

import (
	"slices"
	"time"
)

// Pvmove is one pvmove keel started on this host: the move of a split VDO
// pool's recovery journal back to the fast PVs (plan: the
// vdo.layout.journal_off_fast action), recorded before the command runs
// and forgotten once LVM no longer reports a move from Source in VG. A
// pvmove LV says nothing of who started it (lvm2 names it pvmove<N> and
// records no owner: tools/pvmove.c, _set_up_pvmove_lv), so this record is
// the only way keel tells its own move, which it resumes when it is
// interrupted, from another's (an admin's, another node's on a shared
// VG), which it reports and never touches.
type Pvmove struct {
	// VG is the VG the move runs in.
	VG string `json:"vg"`
	// Source is the PV the move copies from, as LVM names it (the first
	// area of each segment of the pvmove LV: lvm2 lib/metadata/mirror.c,
	// find_pvmove_lv).
	Source string `json:"source"`
	// LV is the one LV moved ("vg/lv", pvmove -n), "" for every LV on
	// Source.
	LV string `json:"lv,omitempty"`
	// Argv is the pvmove keel ran. It is also the command that resumes
	// the move: lvm2's pvmove, finding a move in progress from the source
	// PV, restarts that one and ignores its other arguments ("Detected
	// pvmove in progress", tools/pvmove.c, _pvmove_setup_single), while
	// once the move is over the same LV and extent range hold nothing to
	// move ("No data to move"). A bare `pvmove SOURCE` would instead start
	// a new move of every extent on SOURCE when the move ended meanwhile.
	Argv []string `json:"argv,omitempty"`
	// Started is when keel recorded the move, before it ran pvmove.
	Started time.Time `json:"started"`
}

// StartPvmove records mv, unless a move of the same VG and source is
// recorded already (a resume of keel's own move). It reports whether
// anything changed.
func (st *State) StartPvmove(mv Pvmove) bool {
	if slices.ContainsFunc(st.Pvmoves, func(r Pvmove) bool { return r.VG == mv.VG && r.Source == mv.Source }) {
		return false
	}
	mv.Started = mv.Started.UTC()
	st.Pvmoves = append(st.Pvmoves, mv)
	return true
}

// KeepPvmoves drops every record keep rejects (a move LVM no longer
// reports) and reports whether anything changed.
func (st *State) KeepPvmoves(keep func(Pvmove) bool) bool {
	n := len(st.Pvmoves)
	st.Pvmoves = slices.DeleteFunc(st.Pvmoves, func(r Pvmove) bool { return !keep(r) })
	if len(st.Pvmoves) == 0 {
		st.Pvmoves = nil
	}
	return len(st.Pvmoves) != n
}

// OwnPvmove returns keel's record of the move in vg that copies from one
// of sources and moves the LVs moved ("vg/lv"), if keel started it: a
// record of the VG and a source, for all of the source's LVs or for one LV
// among moved.
func OwnPvmove(recs []Pvmove, vg string, sources, moved []string) (Pvmove, bool) {
	for _, r := range recs {
		if r.VG == vg && slices.Contains(sources, r.Source) && (r.LV == "" || slices.Contains(moved, r.LV)) {
			return r, true
		}
	}
	return Pvmove{}, false
}
