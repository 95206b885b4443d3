package plan

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/keel-storage/keel/lvm"
	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/probes/shell"
	"github.com/keel-storage/keel/reconcile/plan/removal"
	"github.com/keel-storage/keel/reconcile/state"
)

// phaseResume puts the resumption of an interrupted pvmove before every
// other change of its VG: the LVs it moves are locked and their extents
// mirrored until it ends, and the planner cannot place a split pool's
// journal on a PV while it sits on the pvmove's mirror.
const phaseResume = 5

// planPvmove finds, in declared VG vg, the moves a pvmove left half-done,
// and resumes only those keel started itself (Memory.Pvmoves). pvmove
// copies through a temporary mirror LV (named pvmove<N>, lv_attr 'p') and
// commits the new layout only when the copy ends; a pvmove killed or
// crashed before that leaves the mirror LV in the VG's metadata, the moved
// LVs locked, and nobody polling it (lvmpolld, where it runs, keeps
// polling a killed command's move, but a crash or a host without it does
// not).
//
// The mirror LV records no owner (lvm2 tools/pvmove.c, _set_up_pvmove_lv),
// and a resume is not harmless on another's move: lvm2's pvmove restarts
// the move it finds ("Detected pvmove in progress"), activates the mirror
// on this node too and polls it to its end (tools/pvmove.c,
// _pvmove_setup_single and pvmove_poll; tools/polldaemon.c), so on a VG
// another node also sees, without lvmlockd, two nodes copy and commit the
// same move, and on this node an admin's move gets a second poller. keel
// therefore resumes a move only when its state records starting it and no
// process polls it (Host.Pollers), and reports every other move
// (vg.pvmove_other: in progress or interrupted) without acting on it.
//
// keel resumes its own move rather than abort it: lvm2 restarts such a
// move itself when the VG is activated with polling on (the default) and
// documents "run pvmove again ... to restart any operations that were in
// progress from the last checkpoint" (pvmove(8)); for keel's move of a
// split pool's journal, finishing it is the desired layout, where an
// abort would put the journal back on the slow PV for the next pass to
// move again. The resume runs the pvmove keel ran (state.Pvmove.Argv):
// lvm2's tools/pvmove.c restarts the move whose segments read from its
// source PV and ignores the other arguments, and should the move have
// ended meanwhile, the same LV and extents hold nothing to move, where a
// bare `pvmove SOURCE` would start moving every extent off SOURCE. The
// source is the first area of each segment of the mirror LV
// (find_pvmove_lv in lib/metadata/mirror.c).
func (p *planner) planPvmove(vg string) {
	if p.pvmoves == nil {
		p.pvmoves = []*model.LV{}
		for _, key := range p.sortedLVKeys() {
			if lv := p.h.LVs[key]; (len(lv.Attr) > 0 && lv.Attr[0] == 'p') || isPvmoveName(lv.Name) {
				p.pvmoves = append(p.pvmoves, lv)
			}
		}
	}
	for _, lv := range p.pvmoves {
		if lv.VG != vg {
			continue
		}
		if lv.Attr == "" || lv.Attr[0] != 'p' {
			p.planPvmoveOrphan(lv)
			continue
		}
		src := pvmoveSources(lv)
		moving := p.movedBy(lv)
		pollers := p.pollersOf(lv, src)
		rec, own := state.OwnPvmove(p.mem.Pvmoves, vg, src, moving)
		if !own {
			p.reportOtherPvmove(lv, src, moving, pollers)
			continue
		}
		if len(pollers) > 0 {
			// keel's own move, still polled (by the keel that started
			// it, or by lvmpolld): it ends on its own.
			continue
		}
		// The command keel ran resumes its move (state.Pvmove.Argv);
		// a record without it, one pvmove per source PV.
		var cmds [][]string
		if len(rec.Argv) > 0 {
			cmds = append(cmds, rec.Argv)
		} else {
			for _, pv := range src {
				cmds = append(cmds, []string{"pvmove", pv})
			}
		}
		key := p.add(Finding{ID: VGPVMoveInterrupted, Object: lv.FullName,
			Message: fmt.Sprintf("keel's pvmove in VG %s (from %s, started %s) did not finish (%s is still there, and no process polls it): the LVs it moves (%s) stay locked on a temporary mirror until it is resumed, or rolled back with %s",
				vg, rec.Source, state.Stamp(rec.Started), lv.FullName, orNone(moving), abortCommand(src)),
			Expected: "no pvmove in progress", Observed: fmt.Sprintf("%s copying from %s", lv.FullName, orNone(src)),
			Remedy: shellAnd(cmds),
		})
		p.act(phaseResume, Action{ID: "vg.pvmove_interrupted:" + lv.FullName, Kind: KindCommand, Class: Live, Object: lv.FullName,
			Summary:  fmt.Sprintf("resume keel's interrupted pvmove %s from its last checkpoint (source %s)", lv.FullName, strings.Join(src, ", ")),
			Commands: cmds, Remedies: []string{key}})
	}
}

// reportOtherPvmove reports a move keel did not start: in progress while a
// process polls it, interrupted when none does. It is never acted on: the
// one who started it (an admin, another node of a shared VG) resumes or
// rolls it back.
func (p *planner) reportOtherPvmove(lv *model.LV, src, moving []string, pollers []model.Process) {
	follow := shell.Join([]string{"lvs", "-a", "-o", "lv_name,copy_percent,devices", lv.VG})
	if len(pollers) > 0 {
		var by []string
		for _, pr := range pollers {
			by = append(by, fmt.Sprintf("pid %d (%s)", pr.PID, shell.Join(pr.Argv)))
		}
		key := p.add(Finding{ID: VGPVMoveOther, Object: lv.FullName,
			Message: fmt.Sprintf("a pvmove keel did not start is in progress in VG %s: %s copies %s from %s, polled by %s; keel leaves it to whoever started it",
				lv.VG, lv.FullName, orNone(moving), orNone(src), strings.Join(by, ", ")),
			Expected: "no pvmove of another in a declared VG", Observed: "in progress, polled by " + strings.Join(by, ", "),
			Remedy: "wait for it to end; follow it with " + follow,
		})
		p.reportOnly(VGPVMoveOther, lv.FullName, "a pvmove keel did not start, in progress: keel never resumes, aborts or polls another's move", key)
		return
	}
	resume, abort := "pvmove", "pvmove --abort"
	if len(src) > 0 {
		resume, abort = shell.Join([]string{"pvmove", src[0]}), abortCommand(src)
	}
	key := p.add(Finding{ID: VGPVMoveOtherInterrupted, Object: lv.FullName,
		Message: fmt.Sprintf("a pvmove keel did not start stopped before the end in VG %s: %s still copies %s from %s and no pvmove or lvpoll process polls it; the LVs it moves stay locked until whoever started it resumes or rolls it back",
			lv.VG, lv.FullName, orNone(moving), orNone(src)),
		Expected: "no pvmove of another in a declared VG", Observed: "interrupted: no process polls " + lv.FullName,
		Remedy: "on the node that started it, resume it with " + resume + " or roll it back with " + abort,
	})
	p.reportOnly(VGPVMoveOtherInterrupted, lv.FullName, "a pvmove keel did not start, interrupted: keel never resumes or aborts another's move", key)
}

// pollersOf returns the processes that poll the pvmove LV mv, whose
// source PVs are src (probes.isPoller reads which processes those are):
// an lvpoll naming mv ("vg/pvmoveN"), and a pvmove with no source PV
// (it restarts and polls every move), with --abort, or with a source
// among src or one keel cannot resolve to a PV of this host.
func (p *planner) pollersOf(mv *model.LV, src []string) []model.Process {
	var out []model.Process
	for _, pr := range p.h.Pollers {
		if slices.Contains(pr.Argv, mv.FullName) || slices.Contains(pr.Argv, mv.VG+"/["+mv.Name+"]") {
			out = append(out, pr)
			continue
		}
		if slices.Contains(pr.Argv, "lvpoll") {
			continue // lvmpolld's poll of another LV
		}
		source, _, ok := lvm.PvmoveArgs(pr.Argv, mv.VG)
		if !ok {
			out = append(out, pr)
			continue
		}
		if pv := p.resolvePV(source); pv == "" || slices.Contains(src, pv) {
			out = append(out, pr)
		}
	}
	return out
}

// pvmoveSources returns the PVs a pvmove LV copies from: the first area of
// each of its segments, sorted and without repeats.
func pvmoveSources(lv *model.LV) []string {
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
func (p *planner) movedBy(mv *model.LV) []string {
	var out []string
	for _, key := range p.sortedLVKeys() {
		lv := p.h.LVs[key]
		if lv.VG != mv.VG || lv == mv {
			continue
		}
		for _, seg := range lv.Segments {
			if slices.ContainsFunc(seg.Devices, func(d model.SegmentDev) bool { return !d.IsPV && d.Name == mv.Name }) {
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
	return shell.Join([]string{"pvmove", "--abort", src[0]})
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none found"
	}
	return strings.Join(s, ", ")
}

// isPvmoveName reports whether name is one LVM keeps for pvmove's
// temporary LVs: lvm2 refuses names starting "pvmove" for any LV a user
// creates or renames (_lvname_has_reserved_prefix in lib/misc/lvm-string.c),
// so such an LV is always pvmove's own.
func isPvmoveName(name string) bool {
	return strings.HasPrefix(name, "pvmove")
}

// planPvmoveOrphan handles a pvmove LV that is no longer a mirror: what a
// pvmove leaves when it stops between the two commits of its finish.
// lvm2's pvmove_finish (tools/pvmove_poll.c, 2.03.31 as in Debian trixie)
// first detaches the mirror: the moved LVs are committed on their new PV and
// pvmove<N> becomes a visible LV of one error segment, its PVMOVE and LOCKED
// flags cleared (lib/metadata/mirror.c, replace_lv_with_error_segment), and
// the devices are reloaded; then it deactivates pvmove<N> and removes it in a
// second commit. A kill between the two, or a pvmove<N> something holds open
// (the deactivation fails: "ABORTING: Unable to deactivate temporary
// volume"), leaves it there for good: `pvmove` polls only LVs flagged PVMOVE,
// and lvm2 tells the user to "remove orphan temporary logical volume(s)".
// An error segment maps no extents and holds no data, so removing it
// destroys nothing. A moved LV whose live table still maps pvmove<N> (the
// kill fell between a commit and its resume) fails every I/O there, and
// pins pvmove<N>: keel refreshes it from the committed metadata first
// (lvchange --refresh, what lvm2's later versions do in activate_pvmoved_lvs).
// Anything else named pvmove<N> without the 'p' attribute is reported, never
// removed.
//
// Whoever's pvmove left it, the leftover is removed only when no process
// may be finishing it and the VG is this host's alone. A pvmove or lvpoll
// still running on the VG may be inside pvmove_finish, between the two
// commits, about to deactivate and remove it itself. On a VG other hosts
// see (removal.SharedVGs), the move may have run on another node, whose
// moved LVs' live tables can still map the leftover there (the holders
// keel reads are this host's only): removing it from the metadata would
// leave that node's tables pointing at a device LVM no longer knows, so
// the node that ran the move removes it.
func (p *planner) planPvmoveOrphan(lv *model.LV) {
	holders, others := p.dmHolders(lv)
	remove := []string{"lvremove", "-y", lv.FullName}
	var cmds [][]string
	for _, h := range holders {
		cmds = append(cmds, []string{"lvchange", "--refresh", h})
	}
	cmds = append(cmds, remove)
	segType := cmp.Or(lv.SegType, "unknown")
	observed := fmt.Sprintf("%s, segment type %s", lv.FullName, segType)
	msg := fmt.Sprintf("a pvmove in VG %s finished its copy but not its clean-up: %s, its temporary LV, is left as an error-segment LV that holds no data", lv.VG, lv.FullName)
	if len(holders) > 0 {
		msg += fmt.Sprintf("; the live device-mapper tables of %s still map it, so their I/O there fails until they are reloaded from the committed metadata", strings.Join(holders, ", "))
		observed += "; mapped by " + strings.Join(holders, ", ")
	}
	isError := lv.SegType == "error"
	if !isError {
		msg = fmt.Sprintf("VG %s holds %s, named like a pvmove's temporary LV but not flagged as one, of segment type %s: keel does not know what left it", lv.VG, lv.FullName, segType)
	}
	if len(others) > 0 {
		msg += fmt.Sprintf("; it is held open by %s", strings.Join(others, ", "))
		observed += "; held by " + strings.Join(others, ", ")
	}
	// Open with no LV of the VG mapping it: a process or another device.
	heldOpen := len(others) > 0 || lv.Open && len(holders) == 0
	var vgPVs []string
	for _, pv := range p.h.PVs {
		if pv.VG == lv.VG {
			vgPVs = append(vgPVs, pv.Name)
		}
	}
	pollers := p.pollersOf(lv, vgPVs)
	shared, isShared := removal.SharedVGs(p.h, p.d.SharedVGs()...)[lv.VG]
	if isError && len(pollers) > 0 {
		msg += fmt.Sprintf("; a pvmove process runs on VG %s (pid %d) and may be removing it itself", lv.VG, pollers[0].PID)
	}
	if isError && isShared {
		msg += fmt.Sprintf("; VG %s is shared (%s): the move may have run on another node, whose tables can still map it", lv.VG, shared.Why)
	}
	remedy := shellAnd(cmds)
	switch {
	case !isError:
		remedy = shell.Join([]string{"lvs", "-a", "-o", "+segtype,devices", lv.FullName}) + " to see what it maps, then remove it only if nothing needs it"
	case heldOpen:
		remedy = "stop what holds " + shell.Join([]string{"/dev/mapper/" + lv.DMName}) + " open (fuser -v on it names it), then " + remedy
	case len(pollers) > 0:
		remedy = "wait for pid " + fmt.Sprint(pollers[0].PID) + " to end, then, if it is still there, " + remedy
	case isShared:
		remedy = "on the node that ran the move: " + remedy
	}
	key := p.add(Finding{ID: VGPVMoveOrphan, Object: lv.FullName, Message: msg,
		Expected: "no pvmove LV left", Observed: observed, Remedy: remedy})
	switch {
	case !isError:
		p.reportOnly(VGPVMoveOrphan, lv.FullName, "an LV named like a pvmove's that is not an error segment: look at it by hand", key)
	case heldOpen:
		p.reportOnly(VGPVMoveOrphan, lv.FullName, "the leftover pvmove LV is held open by something that is not an LV of its VG", key)
	case len(pollers) > 0:
		p.reportOnly(VGPVMoveOrphan, lv.FullName, "a pvmove process runs on the VG and may be finishing the move that left it", key)
	case isShared:
		p.reportOnly(VGPVMoveOrphan, lv.FullName, "the VG is shared: the node that ran the move removes its leftover", key)
	default:
		what := "remove the leftover pvmove LV " + lv.FullName + " (an error segment: no data)"
		if len(holders) > 0 {
			what = "reload " + strings.Join(holders, ", ") + " from the committed metadata, then " + what
		}
		p.act(phaseResume, Action{ID: "vg.pvmove_orphan:" + lv.FullName, Kind: KindCommand, Class: Live, Object: lv.FullName,
			Summary: what, Commands: cmds, Remedies: []string{key}})
	}
}

// dmHolders returns what holds lv's device-mapper device, from sysfs's
// holders links: the LVs of the host whose tables map it, as "vg/lv", and
// any other holder by its kernel or device-mapper name.
func (p *planner) dmHolders(lv *model.LV) (lvs, others []string) {
	if lv.DMName == "" {
		return nil, nil
	}
	_, q := p.dmQueue(lv.DMName)
	if q == nil {
		return nil, nil
	}
	for _, k := range q.Holders {
		hq := p.h.Queues[k]
		switch {
		case hq != nil && p.lvByDM[hq.DMName] != nil && p.lvByDM[hq.DMName].VG == lv.VG:
			lvs = append(lvs, p.lvByDM[hq.DMName].FullName)
		case hq != nil && hq.DMName != "":
			others = append(others, hq.DMName)
		default:
			others = append(others, k)
		}
	}
	slices.Sort(lvs)
	slices.Sort(others)
	return lvs, others
}
