package converge

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/reconcile/apply/wipe"
	"github.com/keel-storage/keel/reconcile/plan"
	"github.com/keel-storage/keel/reconcile/plan/removal"
	"github.com/keel-storage/keel/reconcile/state"
)

// WipeRequest is one safe removal: keel wipe's command line, or the action
// of an LV listed in its VG's absent list.
type WipeRequest struct {
	// Names are "vg/lv"; with Absent and no names, every absent LV.
	Names []string
	// Mode is how the blocks are cleared ("" means zeroout).
	Mode removal.Mode
	// Absent is the daemon's rule: each name must be in its VG's absent list.
	Absent bool
	// Replay says the host is a node snapshot: keel's state is this host's,
	// not the snapshot's, so it is not used.
	Replay bool
}

// declared is the desired state's absent lists by VG.
func (l *Loop) declared() removal.Declared {
	d := make(removal.Declared, len(l.desired.VolumeGroups))
	for name, vg := range l.desired.VolumeGroups {
		d[name] = vg.AbsentNames()
	}
	return d
}

// pins maps each absent name ("vg/lv") whose entry pins an lv_uuid to it.
func (l *Loop) pins() map[string]string {
	out := map[string]string{}
	for name, vg := range l.desired.VolumeGroups {
		for _, a := range vg.Absent {
			if a.UUID != "" {
				out[name+"/"+a.Name] = a.UUID
			}
		}
	}
	return out
}

// PlanWipe probes the host and plans req against the desired state in
// force; nothing changes. A refusal wraps removal.ErrRefused.
func (l *Loop) PlanWipe(ctx context.Context, req WipeRequest) ([]removal.Target, error) {
	if l.desired == nil {
		return nil, ErrNoDesiredState
	}
	h, err := l.Probe(ctx)
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	decl := l.declared()
	names := req.Names
	if req.Absent && len(names) == 0 {
		names = removal.AbsentNames(decl)
	}
	wr := removal.Request{Names: names, Mode: req.Mode, RequireAbsent: req.Absent, Shared: l.desired.SharedVGs(), Pins: l.pins(),
		AllowUnzeroedThinReuse: l.desired.Removal.AllowUnzeroedThinReuse}
	if req.Replay {
		// Judged as on keel's first pass on that host: every absent name
		// first seen now.
		fresh := state.New()
		fresh.See(removal.AbsentNames(decl), time.Now())
		wr.Known = fresh.Absent
	} else {
		l.wipeMemory(&wr)
	}
	l.wipeVGs(&wr, h, !req.Replay)
	return removal.Plan(h, decl, wr)
}

// RunWipe removes planned targets: an exclusive open of each proves nobody
// holds it before anything is renamed, its content is checked, then each is
// bound to its name in keel's state, renamed, cleared in steps of at most
// step bytes (0: the default) and removed. Its LVM
// commands go through the executor's argv allowlist.
func (l *Loop) RunWipe(ctx context.Context, targets []removal.Target, step uint64) error {
	rm := &wipe.Remover{Exec: l.runner, Step: step, Log: l.log.Named("wipe"),
		Started: l.wipes.Started, Finished: l.wipes.Finished,
		Journal: wipe.DirJournal(filepath.Join(l.stateDir, "wipe"))}
	if err := rm.Check(targets); err != nil {
		return err
	}
	// A PV label, a RAID member or another layer's signature on an LV says
	// something lives on it: refused (blkid -p, read through the probes'
	// runner like every other reading).
	if err := rm.CheckContent(ctx, l.source.Runner, targets); err != nil {
		return err
	}
	// Each target is bound to its name in keel's state before its first
	// change, and its removal recorded after its lvremove.
	return wipe.RemoveRecorded(ctx, rm, l.state, targets, time.Now)
}

// wipeAbsent is the executor's wipe applier: it plans the one LV of s again
// against a fresh probe (every refusal is checked anew) and removes it.
func (l *Loop) wipeAbsent(ctx context.Context, s plan.WipeSpec) error {
	name := s.VG + "/" + s.LV
	targets, err := l.PlanWipe(ctx, WipeRequest{Names: []string{name}, Mode: removal.Mode(s.Mode), Absent: true})
	if err != nil {
		return refusal(fmt.Errorf("wipe %s: %w", name, err))
	}
	if err := l.RunWipe(ctx, targets, s.StepMax); err != nil {
		return refusal(fmt.Errorf("wipe %s: %w", name, err))
	}
	return nil
}

// refusal makes a wipe refusal (a shared VG, a pool below that the fill
// could fill, an LV in use: removal.ErrRefused) the executor's refusal, which
// is reported as reconcile.refused and never retried.
func refusal(err error) error {
	if errors.Is(err, removal.ErrRefused) {
		return &hostio.RefusedError{Reason: err.Error()}
	}
	return err
}
