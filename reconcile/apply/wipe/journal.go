package wipe

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"

	"github.com/keel-storage/keel/reconcile/atomicfile"
	"github.com/keel-storage/keel/reconcile/plan/removal"
)

// checkpointVersion is the format of a checkpoint file; a file of another
// version is not trusted (the wipe starts again at byte 0).
const checkpointVersion = 1

// Checkpoint is how far one wipe pass got: every byte below Offset of the
// LV with UUID LVUUID was cleared in Mode and flushed to the device before
// the checkpoint was written.
type Checkpoint struct {
	Version int    `json:"version"`
	LVUUID  string `json:"lvUUID"`
	// Name is the LV while it is wiped ("vg/del-lv"), for people.
	Name   string       `json:"name"`
	Mode   removal.Mode `json:"mode"`
	Size   uint64       `json:"size"`
	Offset uint64       `json:"offset"`
}

// Journal persists wipe checkpoints so that a wipe that was killed (by
// systemd's watchdog, a reboot, SIGKILL) resumes where it was instead of at
// byte 0 — otherwise a wipe longer than the watchdog's interval would be
// killed and restarted forever.
type Journal interface {
	// Load returns the checkpoint of the LV with this UUID, if any.
	Load(lvUUID string) (Checkpoint, bool, error)
	Save(c Checkpoint) error
	Delete(lvUUID string) error
}

// DirJournal keeps one JSON file per LV UUID in a directory, written
// atomically (reconcile/atomicfile).
type DirJournal string

var uuidRE = regexp.MustCompile(`^[A-Za-z0-9-]{1,64}$`)

func (d DirJournal) path(lvUUID string) (string, error) {
	if !uuidRE.MatchString(lvUUID) {
		return "", fmt.Errorf("wipe journal: %q is not an LV UUID", lvUUID)
	}
	return filepath.Join(string(d), lvUUID+".json"), nil
}

// Load reads the checkpoint of lvUUID. A missing file is no checkpoint; a
// file that does not decode, or of another version, is an error.
func (d DirJournal) Load(lvUUID string) (Checkpoint, bool, error) {
	p, err := d.path(lvUUID)
	if err != nil {
		return Checkpoint{}, false, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return Checkpoint{}, false, nil
	}
	if err != nil {
		return Checkpoint{}, false, fmt.Errorf("wipe journal %s: %w", p, err)
	}
	var c Checkpoint
	if err := json.Unmarshal(b, &c); err != nil {
		return Checkpoint{}, false, fmt.Errorf("wipe journal %s: %w", p, err)
	}
	if c.Version != checkpointVersion || c.LVUUID != lvUUID {
		return Checkpoint{}, false, fmt.Errorf("wipe journal %s: version %d for lv %q, want version %d for %q", p, c.Version, c.LVUUID, checkpointVersion, lvUUID)
	}
	return c, true, nil
}

// Save writes c, creating the directory (0700) when needed.
func (d DirJournal) Save(c Checkpoint) error {
	p, err := d.path(c.LVUUID)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(string(d), 0o700); err != nil {
		return fmt.Errorf("wipe journal: %w", err)
	}
	c.Version = checkpointVersion
	b, _ := json.Marshal(c) // plain data: cannot fail
	return atomicfile.Write(p, append(b, '\n'), 0o600)
}

// Delete removes the checkpoint of lvUUID; none is not an error.
func (d DirJournal) Delete(lvUUID string) error {
	p, err := d.path(lvUUID)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("wipe journal: %w", err)
	}
	return nil
}
