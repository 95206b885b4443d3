// Package statefile keeps keel's state (reconcile/state) in one small
// versioned JSON file, by default /var/lib/keel/state.json, rewritten
// atomically (a temporary file in the same directory, fsync, rename over the
// old one, fsync of the directory) so that a crash at any moment leaves
// either the old or the new file, never a torn one.
package statefile

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"time"

	"github.com/keel-storage/keel/reconcile/atomicfile"
	"github.com/keel-storage/keel/reconcile/state"
	"golang.org/x/sys/unix"
)

// DefaultPath is where keel keeps its state.
const DefaultPath = "/var/lib/keel/state.json"

// ErrNewer is returned for a state file written by a newer keel.
var ErrNewer = errors.New("written by a newer keel")

// ErrCorrupt is returned for a state file that is not valid state JSON.
var ErrCorrupt = errors.New("not a valid keel state file")

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
func (s Store) Load() (*state.State, error) {
	p := s.path()
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return state.New(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("state %s: %w", p, err)
	}
	return decode(p, b)
}

func decode(p string, b []byte) (*state.State, error) {
	var head struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("state %s: %w: %w", p, ErrCorrupt, err)
	}
	switch {
	case head.Version == nil || *head.Version < 1:
		return nil, fmt.Errorf("state %s: %w: no version", p, ErrCorrupt)
	case *head.Version > state.Version:
		return nil, fmt.Errorf("state %s: version %d is %w (this keel reads up to %d); keep the newer keel or move the file away", p, *head.Version, ErrNewer, state.Version)
	}
	st := state.New()
	if err := json.Unmarshal(b, st); err != nil {
		return nil, fmt.Errorf("state %s: %w: %w", p, ErrCorrupt, err)
	}
	if st.Absent == nil {
		st.Absent = map[string]state.Absent{}
	}
	if st.Actions == nil {
		st.Actions = map[string]state.Action{}
	}
	if st.VGs == nil {
		st.VGs = map[string]state.VG{}
	}
	if st.Suspended == nil {
		st.Suspended = map[string]state.Suspended{}
	}
	if st.Holds == nil {
		st.Holds = map[string]state.Hold{}
	}
	st.Version = state.Version
	return st, nil
}

// Save writes st atomically: a temporary file in the state's directory is
// written and fsynced, renamed over the state file, and the directory is
// fsynced so the rename itself survives a power cut. The directory is
// created (mode 0700) when missing.
func (s Store) Save(st *state.State) error {
	p := s.path()
	out := *st
	out.Version = state.Version
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
func (s Store) Update(fn func(*state.State) error) (*state.State, error) {
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

// ErrUnrecorded marks first sights LoadSeeing could not write: the state
// was read, but the file or its directory cannot be written (a read-only
// file system, a user without write access).
var ErrUnrecorded = errors.New("first sight not recorded")

// LoadSeeing is Load that also records now as the first sight of every name
// in absent ("vg/lv") without a record (State.See), writing the file only
// when there is such a name. Every mode that reads the desired state calls
// it before it plans: the record is keel's own memory, not the host's
// storage, so a dry run, keel check and the daemon in audit mode write it
// too. A state that cannot be read is an error with a nil state. When it
// was read but cannot be written, the state as read comes back with an
// error wrapping ErrUnrecorded: the names stay without a record, and
// state.Judge removes nothing for them.
func (s Store) LoadSeeing(absent []string, now time.Time) (*state.State, error) {
	st, err := s.Load()
	if err != nil {
		return nil, err
	}
	probe := *st
	probe.Absent = maps.Clone(st.Absent)
	if !probe.See(absent, now) {
		return st, nil
	}
	saved, err := s.Update(func(u *state.State) error {
		u.See(absent, now)
		return nil
	})
	if err != nil {
		return st, fmt.Errorf("%w: %w", ErrUnrecorded, err)
	}
	return saved, nil
}
