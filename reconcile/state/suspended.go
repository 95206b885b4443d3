package state

import "time"

// Suspended is keel's memory of one device-mapper device it found stuck
// suspended (dm.suspended): since when it has been so with no LVM or
// dmsetup process on its VG. The planner has no clock and a probe sees one
// moment; the wait agent.resumeSuspendedMinutes asks for is measured from
// this record, which a pass that sees such a process drops.
type Suspended struct {
	// QuietSince is the first pass that saw the device suspended with no
	// LVM or dmsetup process on its VG, since the last one that saw one.
	QuietSince time.Time `json:"quiet_since"`
}

// SeeSuspended brings the records in line with one pass: quiet maps every
// device found stuck suspended (by device-mapper name) to whether no LVM
// or dmsetup process was on its VG. A quiet device without a record is
// recorded as quiet since now; a device with such a process, or no longer
// suspended, loses its record. It reports whether anything changed.
func (st *State) SeeSuspended(quiet map[string]bool, now time.Time) bool {
	if st.Suspended == nil {
		st.Suspended = map[string]Suspended{}
	}
	changed := false
	for name, q := range quiet {
		_, known := st.Suspended[name]
		switch {
		case q && !known:
			st.Suspended[name] = Suspended{QuietSince: now.UTC()}
			changed = true
		case !q && known:
			delete(st.Suspended, name)
			changed = true
		}
	}
	for name := range st.Suspended {
		if _, ok := quiet[name]; !ok {
			delete(st.Suspended, name)
			changed = true
		}
	}
	return changed
}
