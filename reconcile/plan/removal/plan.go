// Package removal plans the safe removal of logical volumes: which LVs to
// remove, how to clear each one's blocks, and every refusal, checked before
// anything changes. It reads the same observed model (probes.Host) as every
// other rule of the planner and does no I/O; reconcile/apply/wipe carries
// the plan out.
package removal

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/keel-storage/keel/lvm"
	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/reconcile/state"
)

// DelPrefix is put in front of an LV's name before it is wiped, so that a
// crash leaves a visible del-<name> LV that the next run finishes.
const DelPrefix = "del-"

// Tag is the LVM tag keel adds to an LV just before renaming it. A del-* LV
// is only resumed when it carries this tag or when its original name is in
// its VG's absent list, so keel never wipes an LV that someone else named
// del-something.
const Tag = "keel_wipe"

// Mode says how an LV's blocks are cleared before removal.
type Mode string

const (
	// ModeZeroOut writes zeroes with BLKZEROOUT (WRITE ZEROES when the device
	// offers it, else the kernel writes zero pages itself).
	ModeZeroOut Mode = "zeroout"
	// ModeDiscard discards with BLKDISCARD. It is only used where the stack
	// below returns the space and reads unmapped blocks as zeroes (VDO, thin).
	ModeDiscard Mode = "discard"
)

// Target is one LV to remove, with how to clear it.
type Target struct {
	VG string
	// LV is the LV's name as the user knows it (without del-).
	LV string
	// Resume is set when the LV is already renamed to del-<LV> (a wipe that
	// was interrupted); it is then neither tagged nor renamed again.
	Resume bool
	Active bool
	Size   uint64
	// Mode is how the blocks are cleared.
	Mode Mode
	// DiscardAfter is set when the blocks are zeroed and then also
	// discarded, so that VDO below gets them back.
	DiscardAfter bool
	// NoZeroFill is set for a thin LV: its blocks are never zero-filled.
	NoZeroFill bool
	// Notes say why the mode differs from the one asked for.
	Notes []string
	// UUID and Created identify the LV; keel's state binds them to the
	// name, and the wipe's checkpoints are kept by the UUID (it survives
	// the rename to del-<name>).
	UUID    string
	Created time.Time
}

// Name is "vg/lv" as the user knows it.
func (t Target) Name() string { return t.VG + "/" + t.LV }

// DelName is "vg/del-lv", the LV's name while it is wiped.
func (t Target) DelName() string { return t.VG + "/" + DelPrefix + t.LV }

// Request is what to remove and under which rules.
type Request struct {
	// Names are "vg/lv" as given on the command line, or every absent entry.
	Names []string
	// Mode is the removal.mode asked for ("" means zeroout).
	Mode Mode
	// RequireAbsent refuses names that are not in their VG's absent list (the
	// daemon's rule); the CLI only needs the VG to be declared.
	RequireAbsent bool
	// Known is keel's record of each absent name by "vg/lv"
	// (state.State.Absent); Held says why it could not be read. Under
	// RequireAbsent, and for every resumed del-* LV, an LV that is not the
	// one its absent entry was written for is not removed (identity.go).
	Known map[string]state.Absent
	Held  string
	// Shared names the VGs the desired state declares shared (shared:
	// true): refused like a VG LVM or Proxmox VE reports shared.
	Shared []string
	// PVs are the declared PVs of each declared VG, and VGs keel's record of
	// each one's vg_uuid (state.State.VGs). Nothing is removed or resumed in
	// a VG that is not the declared one (VGIdentity); a VG without PVs here
	// is not judged.
	PVs map[string][]string
	VGs map[string]state.VG
	// Pins maps an absent name ("vg/lv") whose entry pins an lv_uuid to
	// that uuid: only the LV with it is removed for the name.
	Pins map[string]string
	// AllowUnzeroedThinReuse is removal.allowUnzeroedThinReuse: remove a
	// thin LV even when its pool does not zero new chunks (alloc.go);
	// otherwise that removal is refused.
	AllowUnzeroedThinReuse bool
}

// ErrRefused marks a refusal: nothing was changed.
var ErrRefused = errors.New("refused")

// Declared maps each VG the desired state declares to its absent list.
type Declared map[string][]string

// AbsentNames returns "vg/lv" for every absent entry of every declared VG,
// sorted.
func AbsentNames(decl Declared) []string {
	var out []string
	for vg, absent := range decl {
		for _, lv := range absent {
			out = append(out, vg+"/"+lv)
		}
	}
	sort.Strings(out)
	return out
}

// Plan works out what to remove: first every interrupted wipe (a del-* LV in
// a declared VG that keel tagged or whose name is absent), then each
// requested name. It checks every refusal before anything is changed and
// returns all of them joined (each wrapping ErrRefused) with no targets when
// there is any. Requested names that are already gone are skipped when
// RequireAbsent is set (the desired state already holds) and refused
// otherwise.
func Plan(h *model.Host, decl Declared, req Request) ([]Target, error) {
	mode := req.Mode
	if mode == "" {
		mode = ModeZeroOut
	}
	if mode != ModeZeroOut && mode != ModeDiscard {
		return nil, fmt.Errorf("removal mode %q: %w: must be zeroout or discard", mode, ErrRefused)
	}
	o := observe(h, req.Shared...)
	var targets []Target
	seen := map[string]bool{}

	// Interrupted wipes first, in name order.
	keys := make([]string, 0, len(o.LVs))
	for k := range o.LVs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		lv := o.LVs[k]
		orig, ok := strings.CutPrefix(lv.Name, DelPrefix)
		absent, declared := decl[lv.VG]
		if !ok || orig == "" || !declared || lv.Hidden {
			continue
		}
		if !hasTag(lv, Tag) && !slices.Contains(absent, orig) {
			continue
		}
		if !req.resumable(lv.VG+"/"+orig, lv) {
			continue // not keel's to resume: the planner reports it (lv.absent_reappeared)
		}
		if req.vgHeld(h, lv.VG+"/"+orig, lv.VG) != nil {
			continue // not the declared VG: the planner reports it (vg.foreign, vg.uuid_changed)
		}
		if err := o.refuseKind(lv); err != nil {
			return nil, fmt.Errorf("resume %s/%s: %w", lv.VG, lv.Name, err)
		}
		t := o.target(lv, orig, mode)
		t.Resume = true
		targets = append(targets, t)
		seen[t.Name()] = true
	}

	var refusals []error
	for _, name := range req.Names {
		if seen[name] {
			continue
		}
		seen[name] = true
		if strings.HasPrefix(name, "/") {
			msg := "keel wipes LVs given as VG/LV, not devices"
			if pv, ok := o.PVs[name]; ok {
				msg = fmt.Sprintf("is a PV (of vg %q); keel wipes LVs only", pv.VG)
			}
			refusals = append(refusals, fmt.Errorf("%s: %w: %s", name, ErrRefused, msg))
			continue
		}
		n, err := lvm.Parse(name)
		if err != nil {
			refusals = append(refusals, fmt.Errorf("%q: %w: not a valid VG/LV name", name, ErrRefused))
			continue
		}
		vg, lvName := n.VG, n.LV
		absent, declared := decl[vg]
		if !declared {
			refusals = append(refusals, fmt.Errorf("lv %s: %w: vg %s is not declared in the desired state", name, ErrRefused, vg))
			continue
		}
		if err := req.vgHeld(h, name, vg); err != nil {
			refusals = append(refusals, err)
			continue
		}
		if req.RequireAbsent && !slices.Contains(absent, lvName) {
			refusals = append(refusals, fmt.Errorf("lv %s: %w: not in the absent list of vg %s", name, ErrRefused, vg))
			continue
		}
		if strings.HasPrefix(lvName, DelPrefix) {
			refusals = append(refusals, fmt.Errorf("lv %s: %w: name starts with %s and was not left by keel; give the original name", name, ErrRefused, DelPrefix))
			continue
		}
		lv, found := o.LVs[name]
		if !found {
			if req.RequireAbsent {
				continue // already gone
			}
			refusals = append(refusals, fmt.Errorf("lv %s: %w: no such LV", name, ErrRefused))
			continue
		}
		if _, clash := o.LVs[vg+"/"+DelPrefix+lvName]; clash {
			refusals = append(refusals, fmt.Errorf("lv %s: %w: %s/%s%s exists already", name, ErrRefused, vg, DelPrefix, lvName))
			continue
		}
		if err := o.refuseKind(lv); err != nil {
			refusals = append(refusals, fmt.Errorf("lv %s: %w", name, err))
			continue
		}
		if err := req.identity(name, lv); err != nil {
			refusals = append(refusals, err)
			continue
		}
		targets = append(targets, o.target(lv, lvName, mode))
	}
	removed := map[string]bool{}
	for _, n := range append(AbsentNames(decl), req.Names...) {
		removed[n] = true
	}
	covered := func(vg, lv string) bool { return removed[vg+"/"+lv] }
	refusals = append(refusals, o.applyGuards(targets, req, covered)...)
	if len(refusals) > 0 {
		return nil, errors.Join(refusals...)
	}
	return targets, nil
}

// refuseKind refuses LVs that must never be wiped by name: pools, VDO LVs
// (removing one takes its pool along), hidden sub-LVs, PVs of stacked VGs
// and open LVs.
func (o *observed) refuseKind(lv *model.LV) error {
	switch {
	case lv.Hidden:
		return fmt.Errorf("%w: is a hidden sub-LV", ErrRefused)
	case lv.SegType == "thin-pool":
		return fmt.Errorf("%w: is a thin pool; remove its thin LVs, and the pool from the desired state", ErrRefused)
	case lv.SegType == "vdo-pool":
		return fmt.Errorf("%w: is a VDO pool", ErrRefused)
	case lv.SegType == "vdo":
		return fmt.Errorf("%w: is a VDO LV (removing it removes its pool)", ErrRefused)
	case lv.SegType == "cache-pool" || lv.SegType == "cache" || lv.SegType == "writecache":
		return fmt.Errorf("%w: is a cache LV (%s)", ErrRefused, lv.SegType)
	}
	if lv.DMName != "" {
		for _, pv := range o.PVs {
			if o.pvDMName(pv) == lv.DMName {
				if pv.VG == "" {
					return fmt.Errorf("%w: is a PV (in no VG yet)", ErrRefused)
				}
				return fmt.Errorf("%w: is a PV (of vg %s)", ErrRefused, pv.VG)
			}
		}
	}
	if err := o.refuseDependents(lv); err != nil {
		return err
	}
	if lv.Open {
		return fmt.Errorf("%w: is open (in use by a VM, a mount or another device)", ErrRefused)
	}
	return nil
}

// Whether a discard leaves zeroes is a property of the devices under each
// extent of the LV, not of its VG: a VG stacked on a VDO LV may later get a
// plain disk by vgextend, and an LV allocated there has no VDO below it.
//   - dm-vdo reads an unmapped logical block, one "never written, or
//     discarded", as zeroes, and keeps no data block for an all-zero block
//     (zero-block elimination; the kernel's
//     Documentation/admin-guide/device-mapper/vdo-design.rst).
//   - dm-thin reads an unprovisioned block as zeroes, and a discard
//     unprovisions it (Documentation/admin-guide/device-mapper/
//     thin-provisioning.rst); thin LVs are handled by allocRules.
//   - A disk makes no such promise: SCSI reports with LBPRZ whether an
//     unmapped block reads as zeroes, ATA with "deterministic read zeroes
//     after TRIM", NVMe with DLFEAT, and without them an unmapped block may
//     read as its old bytes (a TRIM is a hint). The kernel only offers
//     zeroes through WRITE ZEROES (queue/write_zeroes_max_bytes), which is
//     what BLKZEROOUT uses (block/blk-lib.c), never through BLKDISCARD.
// So an LV is discarded only when every PV under every segment of it is a
// VDO LV (below: stack.Below, sub-LVs followed); anything else is
// zero-filled.

// vdoUnder splits the PVs under lv into VDO LVs and anything else (disks,
// other LVs); both are sorted.
func (o *observed) vdoUnder(lv *model.LV) (vdo, other []string) {
	for _, pv := range o.stack.Below[lv.VG+"/"+lv.Name] {
		if key := o.lvOfPV(pv); key != "" && o.LVs[key].SegType == "vdo" {
			vdo = append(vdo, pv)
		} else {
			other = append(other, pv)
		}
	}
	return vdo, other
}

func (o *observed) target(lv *model.LV, orig string, mode Mode) Target {
	t := Target{VG: lv.VG, LV: orig, Active: lv.Active, Size: lv.Size, Mode: mode, UUID: lv.UUID, Created: created(lv)}
	vdo, other := o.vdoUnder(lv)
	onlyVDO := len(vdo) > 0 && len(other) == 0
	gives := onlyVDO || lv.SegType == "thin"
	switch {
	case mode == ModeDiscard && !gives && len(vdo) > 0:
		t.Mode = ModeZeroOut
		t.Notes = append(t.Notes, fmt.Sprintf("removal.mode is discard but only part of %s is on VDO (%s): its extents on %s would keep their bytes after a discard: zeroing instead",
			t.Name(), strings.Join(vdo, ", "), strings.Join(other, ", ")))
	case mode == ModeDiscard && !gives:
		t.Mode = ModeZeroOut
		t.Notes = append(t.Notes, "removal.mode is discard but nothing below "+t.Name()+" returns discarded blocks as zeroes (not thin, not on VDO): zeroing instead")
	case mode == ModeZeroOut && onlyVDO:
		t.DiscardAfter = true
		t.Notes = append(t.Notes, t.Name()+" is only on VDO ("+strings.Join(vdo, ", ")+"): discarding after zeroing so VDO frees the blocks")
	}
	// A zero-filled LV only partly on VDO is not discarded after: VDO keeps
	// no block for the zeroes written, so the fill alone gives VDO its
	// blocks back, while a discard that reaches the disk part may turn its
	// zeroes back into whatever the disk returns for an unmapped block.
	return t
}

// Clearing tells, before Plan, how removal clears an LV of a host, so that
// the planner's findings and actions name the mode the wipe will use.
type Clearing struct{ o *observed }

// NewClearing reads h once for Clears.
func NewClearing(h *model.Host) Clearing { return Clearing{o: observe(h)} }

// Clears returns how lv is cleared when mode is asked for: the mode used
// and whether a discard follows the zero-fill. A thin LV is discarded
// (allocRules).
func (c Clearing) Clears(lv *model.LV, mode Mode) (Mode, bool) {
	if lv.SegType == "thin" {
		return ModeDiscard, false
	}
	t := c.o.target(lv, lv.Name, mode)
	return t.Mode, t.DiscardAfter
}
