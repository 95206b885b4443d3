package removal

import "fmt"

// applyGuards applies the rules that depend on what surrounds each planned
// target (guests that name it, shared VGs, the pools below) and returns one refusal per target
// that breaks one; it may change a target's mode (a thin LV is discarded).
//
// covered reports whether vg/lv is removed too (declared absent or
// requested): a volume chain is removed only whole (chain.go).
func (o *observed) applyGuards(targets []Target, req Request, covered func(vg, lv string) bool) []error {
	var refusals []error
	for i := range targets {
		t := &targets[i]
		name := t.LV
		if t.Resume {
			name = DelPrefix + t.LV
		}
		what := "lv " + t.Name()
		if t.Resume {
			what = "resume " + t.DelName()
		}
		// Before the shared VG's rule: its remedy (pvesm free) would
		// destroy a disk a guest still names.
		if err := o.refuseGuests(t.VG, t.LV); err != nil {
			refusals = append(refusals, fmt.Errorf("%s: %w", what, err))
			continue
		}
		if err := o.refuseShared(t.VG, t.LV); err != nil {
			refusals = append(refusals, fmt.Errorf("%s: %w", what, err))
			continue
		}
		if err := o.refuseChain(t.VG, t.LV, covered); err != nil {
			refusals = append(refusals, fmt.Errorf("%s: %w", what, err))
			continue
		}
		lv, ok := o.LVs[t.VG+"/"+name]
		if !ok {
			continue
		}
		if err := o.allocRules(lv, t, req.AllowUnzeroedThinReuse); err != nil {
			refusals = append(refusals, fmt.Errorf("%s: %w", what, err))
		}
	}
	return refusals
}

// refuseChain refuses the removal of vg/name when it would leave part of a
// Proxmox VE volume chain behind (ChainOf), and the removal of a snapshot
// of a chain whose current volume a guest names: that guest's disk reads
// through the snapshot.
func (o *observed) refuseChain(vg, name string, covered func(vg, lv string) bool) error {
	c := ChainOf(o.Host, vg, name, func(lv string) bool { return covered(vg, lv) })
	if c != nil {
		return fmt.Errorf("%w: %s: %s", ErrRefused, c.Why(), c.Remedy())
	}
	if c := chainOf(o.Host, vg, name); c != nil && c.Snapshot != "" {
		if err := o.refuseGuests(vg, c.Volume); err != nil {
			return fmt.Errorf("snapshot %s of the volume chain of %s/%s: %w", c.Snapshot, vg, c.Volume, err)
		}
	}
	return nil
}
