package converge

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/keel-storage/keel/lvm"
	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/reconcile/plan"
	"github.com/keel-storage/keel/reconcile/state"
)

// startingPvmove records in keel's state, before the executor runs it,
// each pvmove that starts a move (lvm.PvmoveArgs): the record is how a
// later pass, or another keel process, tells keel's move, which it resumes
// if it is interrupted, from another's, which it only reports
// (plan.Memory.Pvmoves). A move that cannot be recorded is not started:
// unrecorded, keel could not finish it after a kill. The action's object
// ("vg/..." ) names the VG.
func (l *Loop) startingPvmove(a plan.Action, argv []string) error {
	vg := lvm.Split(a.Object).VG
	src, lv, ok := lvm.PvmoveArgs(argv, vg)
	if !ok || vg == "" {
		return nil
	}
	mv := state.Pvmove{VG: vg, Source: src, LV: lv, Argv: slices.Clone(argv), Started: time.Now()}
	st, err := l.state.Update(func(st *state.State) error {
		st.StartPvmove(mv)
		return nil
	})
	if err != nil {
		return fmt.Errorf("pvmove from %s in vg %s not started: it cannot be recorded in keel's state: %w", mv.Source, vg, err)
	}
	l.mem.Pvmoves = st.Pvmoves
	l.log.Info("pvmove recorded as keel's", "vg", vg, "source", mv.Source, "lv", mv.LV)
	return nil
}

// seePvmoves puts keel's records of its pvmoves into the planner's memory,
// first forgetting each move LVM no longer reports in a VG that reads
// whole (present and not partial): a pvmove LV copying from the record's
// source PV is the move still under way. The records are keel's own
// memory, so every mode forgets, as every mode records first sights. A
// state that cannot be read leaves none: every move is then judged
// another's, reported and not resumed.
func (l *Loop) seePvmoves(h *model.Host) {
	if h == nil {
		return
	}
	st, err := l.state.Load()
	if err != nil {
		l.log.Error("keel's state cannot be read: no pvmove is judged keel's own", "err", err)
		l.mem.Pvmoves = nil
		return
	}
	if !slices.ContainsFunc(st.Pvmoves, func(r state.Pvmove) bool { return pvmoveGone(h, r) }) {
		l.mem.Pvmoves = st.Pvmoves
		return
	}
	st, err = l.state.Update(func(st *state.State) error {
		st.KeepPvmoves(func(r state.Pvmove) bool {
			if pvmoveGone(h, r) {
				l.log.Info("keel's pvmove ended: record dropped", "vg", r.VG, "source", r.Source, "started", state.Stamp(r.Started))
				return false
			}
			return true
		})
		return nil
	})
	if err != nil {
		l.log.Warn("the records of keel's ended pvmoves cannot be dropped", "err", err)
		if st, err = l.state.Load(); err != nil {
			l.mem.Pvmoves = nil
			return
		}
	}
	l.mem.Pvmoves = st.Pvmoves
}

// pvmoveGone reports whether h shows that the move r is over: its VG reads
// whole and holds no pvmove LV (lv_attr 'p') whose segments copy from
// r.Source.
func pvmoveGone(h *model.Host, r state.Pvmove) bool {
	vg := h.VGs[r.VG]
	if vg == nil || vg.Partial() {
		return false
	}
	for _, lv := range h.LVs {
		if lv.VG != r.VG || !strings.HasPrefix(lv.Attr, "p") {
			continue
		}
		for _, seg := range lv.Segments {
			if len(seg.Devices) > 0 && seg.Devices[0].IsPV && seg.Devices[0].Name == r.Source {
				return false
			}
		}
	}
	return true
}
