package removal

import "fmt"

// applyGuards applies the rules that depend on what surrounds each planned
// target (guests that name it, shared VGs, the pools below) and returns one refusal per target
// that breaks one; it may change a target's mode (a thin LV is discarded).
func (o *observed) applyGuards(targets []Target, req Request) []error {
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
