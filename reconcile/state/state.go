// Package state is what keel remembers about its host across processes,
// restarts and reboots: the identity of the LVs keel removes for an absent
// name (see docs/removal.md) and, per action ID, room for the executor's
// records (the destructive actions that already ran, the stuck ones). It is
// plain data and the rules on it, with no I/O: reconcile/state/statefile
// keeps it in one small versioned JSON file. The planner never reads the
// file: the caller loads it and hands the records to planning as input.
package state

import (
	"time"
)

// Version is the format version this keel writes. A file with a newer
// version is refused (it was written by a newer keel that may record things
// this one would drop); an older one is upgraded on the next write.
// Version 2 added VGs: a version 1 file reads as a state with no VG seen yet.
// Version 3 added Pvmoves: an older file reads as one with no move of keel's.
// Version 4 added Suspended and Holds: an older keel refuses the file
// rather than drop an operator's holds when it writes it.
const Version = 4

// State is the whole file.
type State struct {
	Version int `json:"version"`
	// Absent holds, by "vg/lv", what keel knows of each name it has seen in
	// an absent list.
	Absent map[string]Absent `json:"absent,omitempty"`
	// Actions holds the executor's records by action ID.
	Actions map[string]Action `json:"actions,omitempty"`
	// VGs holds, by VG name, the identity of each declared VG keel has
	// seen (vg.go).
	VGs map[string]VG `json:"vgs,omitempty"`
	// Pvmoves lists the pvmoves keel started and LVM still reports
	// (pvmove.go).
	Pvmoves []Pvmove `json:"pvmoves,omitempty"`
	// Suspended holds, by device-mapper name, the devices found stuck
	// suspended and since when no LVM command was seen on them
	// (suspended.go).
	Suspended map[string]Suspended `json:"suspended,omitempty"`
	// Holds holds the operators' holds by object (hold.go).
	Holds map[string]Hold `json:"holds,omitempty"`
}

// Absent is keel's memory of one absent name.
type Absent struct {
	// FirstSeen is when keel first read a desired state that listed the
	// name as absent, in any mode that reads one (keel check, keel plan, a
	// dry run, the daemon in audit or converge, keel activate). An LV created at or after that moment was
	// made after the name was declared absent (a reused name) and is never
	// removed for it.
	FirstSeen time.Time `json:"first_seen"`
	// Bound lists each LV keel began to remove under this name, oldest
	// first. Any other LV that shows up under the name is a reused name.
	Bound []Binding `json:"bound,omitempty"`
}

// Binding is one LV keel began to remove under an absent name.
type Binding struct {
	// UUID is the LV's lv_uuid; it survives the rename to del-<name>.
	UUID string `json:"uuid"`
	// Created is the LV's lv_time (zero when LVM did not report one).
	Created time.Time `json:"created,omitempty"`
	// Started is when keel recorded the binding, before its first change.
	Started time.Time `json:"started"`
	// Removed is when lvremove of this LV succeeded; zero while unfinished.
	Removed time.Time `json:"removed,omitempty"`
}

// Action is what the executor keeps about one action ID.
type Action struct {
	// Ran is when a destructive action first ran, recorded before its first
	// change. Zero for every other action.
	Ran time.Time `json:"ran,omitempty"`
	// Target is the lv_uuid of the LV a destructive action ran against.
	Target string `json:"target,omitempty"`
	// Finished is when the destructive action converged; it never runs again.
	Finished time.Time `json:"finished,omitempty"`
	// Failed says why the destructive action ended without converging; it
	// is not run again by keel's loop (a person resumes it with keel wipe).
	Failed string `json:"failed,omitempty"`
	// Stuck is set while the action is stuck.
	Stuck *Stuck `json:"stuck,omitempty"`
}

// Empty reports whether a holds nothing worth keeping.
func (a Action) Empty() bool { return a.Ran.IsZero() && a.Stuck == nil }

// Stuck is a stuck action: not retried until its fingerprint (what it
// remedies) changes.
type Stuck struct {
	Fingerprint string    `json:"fingerprint"`
	Reason      string    `json:"reason"`
	Since       time.Time `json:"since"`
}

// New returns an empty state of the current version.
func New() *State {
	return &State{Version: Version, Absent: map[string]Absent{}, Actions: map[string]Action{}, VGs: map[string]VG{},
		Suspended: map[string]Suspended{}, Holds: map[string]Hold{}}
}
