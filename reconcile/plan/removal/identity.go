package removal

import (
	"fmt"

	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/reconcile/state"
)

// identity refuses, under the daemon's rule (RequireAbsent), an LV that is
// not the one its absent entry was written for (state.Judge): a reused
// name, or an LV keel cannot tell from one. A removal asked for by name on
// the command line is the operator's own decision and is not judged.
func (r Request) identity(name string, lv *model.LV) error {
	if !r.RequireAbsent {
		return nil
	}
	return r.judge(name, lv)
}

// judge applies state.Judge to lv under name with the request's records.
func (r Request) judge(name string, lv *model.LV) error {
	if r.Held != "" {
		return fmt.Errorf("lv %s: %w: keel's state cannot be read (%s); nothing is removed for absent until it can", name, ErrRefused, r.Held)
	}
	rec, known := r.Known[name]
	if why := state.Judge(rec, known, state.LV{UUID: lv.UUID, Created: created(lv)}, r.Pins[name]); why != "" {
		return fmt.Errorf("lv %s: %w: not the LV the absent entry was written for (lv.absent_reappeared): %s; to remove it anyway run: keel wipe %s",
			name, ErrRefused, why, name)
	}
	return nil
}

// resumable reports whether the del-* LV lv, left under name, is keel's to
// finish: the LV bound to the name and not yet removed (state.Judge), or,
// when keel has no record of the name at all, an LV that carries keel's
// tag: keel renamed and began to clear it itself (a keel wipe by hand whose
// binding could not be written), so its data is already partly gone.
func (r Request) resumable(name string, lv *model.LV) bool {
	if _, known := r.Known[name]; !known && r.Held == "" && hasTag(lv, Tag) {
		return true
	}
	return r.judge(name, lv) == nil
}
