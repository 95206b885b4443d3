package state

import "time"

// Hold is an operator's hold on one object (keel hold): while it is in
// force keel changes nothing on the object, and its generated udev rules
// leave it out, so that storage surgery by hand (a cache drained before a
// disk is pulled, a table swapped during recovery) is not undone.
type Hold struct {
	// Reason says why, for whoever reads keel check.
	Reason string `json:"reason"`
	// Since is when the hold was recorded.
	Since time.Time `json:"since"`
	// Until is when the hold lapses; zero holds until keel release.
	Until time.Time `json:"until,omitzero"`
}

// InForce reports whether h still holds at now: a zero now (a caller
// without a clock) keeps every hold in force.
func (h Hold) InForce(now time.Time) bool {
	return h.Until.IsZero() || now.IsZero() || now.Before(h.Until)
}
