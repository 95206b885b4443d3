// Package state is what keel remembers about its host across processes,
// restarts and reboots: one small versioned JSON file, by default
// /var/lib/keel/state.json, rewritten atomically (a temporary file in the
// same directory, fsync, rename over the old one, fsync of the directory) so
// that a crash at any moment leaves either the old or the new file, never a
// torn one.
//
// It holds the identity of the LVs keel removes for an absent name (see
// docs/removal.md) and, per action ID, room for the executor's records (the
// destructive actions that already ran, the stuck ones). The planner never
// reads it: the caller loads it and hands the records to planning as input.
package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/keel-storage/keel/reconcile/atomicfile"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// Version is the format version this keel writes. A file with a newer
// version is refused (it was written by a newer keel that may record things
// this one would drop); an older one is upgraded on the next write.
const Version = 1

// DefaultPath is where keel keeps its state.
const DefaultPath = "/var/lib/keel/state.json"

// ErrNewer is returned for a state file written by a newer keel.
var ErrNewer = errors.New("written by a newer keel")

// ErrCorrupt is returned for a state file that is not valid state JSON.
var ErrCorrupt = errors.New("not a valid keel state file")

// State is the whole file.
type State struct {
	Version int `json:"version"`
	// Absent holds, by "vg/lv", what keel knows of each name it has seen in
	// an absent list.
	Absent map[string]Absent `json:"absent,omitempty"`
	// Actions holds the executor's records by action ID.
	Actions map[string]Action `json:"actions,omitempty"`
}

// Absent is keel's memory of one absent name.
type Absent struct {
	// FirstSeen is when keel first planned against a desired state that
	// listed the name as absent. An LV created at or after that moment was
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
	return &State{Version: Version, Absent: map[string]Absent{}, Actions: map[string]Action{}}
}

// Store reads and writes one state file.
type Store struct {
	// Path is the state file; "" means DefaultPath.
	Path string
}

func (s Store) path() string {
	if s.Path == "" {
		return DefaultPath
	}
	return s.Path
}

// Load reads the state. A missing file is an empty state (a host keel has
// not changed yet); a file that does not parse, or that a newer keel wrote,
// is an error naming the file, and the caller must then hold every action
// that depends on it.
func (s Store) Load() (*State, error) {
	p := s.path()
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return New(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("state %s: %w", p, err)
	}
	return decode(p, b)
}

func decode(p string, b []byte) (*State, error) {
	var head struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("state %s: %w: %w", p, ErrCorrupt, err)
	}
	switch {
	case head.Version == nil || *head.Version < 1:
		return nil, fmt.Errorf("state %s: %w: no version", p, ErrCorrupt)
	case *head.Version > Version:
		return nil, fmt.Errorf("state %s: version %d is %w (this keel reads up to %d); keep the newer keel or move the file away", p, *head.Version, ErrNewer, Version)
	}
	st := New()
	if err := json.Unmarshal(b, st); err != nil {
		return nil, fmt.Errorf("state %s: %w: %w", p, ErrCorrupt, err)
	}
	if st.Absent == nil {
		st.Absent = map[string]Absent{}
	}
	if st.Actions == nil {
		st.Actions = map[string]Action{}
	}
	st.Version = Version
	return st, nil
}

// Save writes st atomically: a temporary file in the state's directory is
// written and fsynced, renamed over the state file, and the directory is
// fsynced so the rename itself survives a power cut. The directory is
// created (mode 0700) when missing.
func (s Store) Save(st *State) error {
	p := s.path()
	out := *st
	out.Version = Version
	b, err := json.MarshalIndent(&out, "", "  ")
	if err != nil {
		return fmt.Errorf("state %s: %w", p, err)
	}
	b = append(b, '\n')
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("state %s: %w", p, err)
	}
	if err := atomicfile.Write(p, b, 0o600); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	return nil
}

// Update loads the state, lets fn change it and saves it, holding an
// exclusive lock (flock on <path>.lock) throughout, so that a keel wipe run by
// hand and the daemon never lose each other's records. When fn returns an
// error nothing is written. It returns the state as saved.
func (s Store) Update(fn func(*State) error) (*State, error) {
	p := s.path()
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return nil, fmt.Errorf("state %s: %w", p, err)
	}
	lock, err := os.OpenFile(p+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("state %s: lock: %w", p, err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return nil, fmt.Errorf("state %s: lock: %w", p, err)
	}
	defer unix.Flock(int(lock.Fd()), unix.LOCK_UN)
	st, err := s.Load()
	if err != nil {
		return nil, err
	}
	if err := fn(st); err != nil {
		return nil, err
	}
	if err := s.Save(st); err != nil {
		return nil, err
	}
	return st, nil
}

// LoadSeeing is Load that also records now as the first sight of every name
// in absent ("vg/lv") without a record (State.See), writing the file only
// when there is such a name. Callers that plan to act call it before they
// plan; a dry run calls Load.
func (s Store) LoadSeeing(absent []string, now time.Time) (*State, error) {
	st, err := s.Load()
	if err != nil || !st.See(absent, now) {
		return st, err
	}
	return s.Update(func(u *State) error {
		u.See(absent, now)
		return nil
	})
}
