package statefile

import (
	"errors"
	"github.com/keel-storage/keel/reconcile/state"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

func TestLoadMissingIsEmpty(t *testing.T) {
	s := Store{Path: filepath.Join(t.TempDir(), "sub", "state.json")}
	st, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	if st.Version != state.Version || len(st.Absent) != 0 || len(st.Actions) != 0 {
		t.Fatalf("missing file: got %+v, want an empty state", st)
	}
}

// A saved state reads back equal from a new Store (a new process), and the
// directory holds nothing but the state and its lock.
func TestSaveLoadRoundTrip(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "keel", "state.json")
	st := state.New()
	st.See([]string{"vms/vm-101-disk-0"}, t0)
	st.Bind("vms/vm-101-disk-0", state.LV{UUID: "u1", Created: t0.Add(-time.Hour)}, t0.Add(time.Minute))
	st.Removed("vms/vm-101-disk-0", "u1", t0.Add(2*time.Minute))
	st.Actions["lv.absent:vms/vm-101-disk-0"] = state.Action{Ran: t0, Stuck: &state.Stuck{Fingerprint: "f", Reason: "r", Since: t0}}
	if err := (Store{Path: p}).Save(st); err != nil {
		t.Fatal(err)
	}
	got, err := Store{Path: p}.Load()
	if err != nil {
		t.Fatal(err)
	}
	rec := got.Absent["vms/vm-101-disk-0"]
	if !rec.FirstSeen.Equal(t0) || len(rec.Bound) != 1 || rec.Bound[0].UUID != "u1" ||
		!rec.Bound[0].Removed.Equal(t0.Add(2*time.Minute)) || !rec.Bound[0].Created.Equal(t0.Add(-time.Hour)) {
		t.Errorf("absent record after reload: %+v", rec)
	}
	if a := got.Actions["lv.absent:vms/vm-101-disk-0"]; !a.Ran.Equal(t0) || a.Stuck == nil || a.Stuck.Fingerprint != "f" {
		t.Errorf("action record after reload: %+v", a)
	}
	fi, err := os.Stat(filepath.Dir(p))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("state directory: %v, mode %v, want 0700", err, fi.Mode().Perm())
	}
	ents, _ := os.ReadDir(filepath.Dir(p))
	if len(ents) != 1 || ents[0].Name() != "state.json" {
		t.Errorf("state directory holds %v, want only state.json (no temporary file left)", ents)
	}
}

func TestLoadRefusesNewerVersion(t *testing.T) {
	p := filepath.Join(t.TempDir(), "state.json")
	if err := os.WriteFile(p, []byte(`{"version": 99, "absent": {}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Store{Path: p}.Load()
	if !errors.Is(err, ErrNewer) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "version 99") {
		t.Fatalf("newer version: %v, want ErrNewer naming %s and version 99", err, p)
	}
	// Update must not overwrite it either.
	if _, err := (Store{Path: p}).Update(func(*state.State) error { return nil }); !errors.Is(err, ErrNewer) {
		t.Fatalf("update over a newer file: %v, want ErrNewer", err)
	}
	if b, _ := os.ReadFile(p); !strings.Contains(string(b), `"version": 99`) {
		t.Errorf("newer file was rewritten: %s", b)
	}
}

func TestLoadRefusesCorrupt(t *testing.T) {
	for name, body := range map[string]string{
		"torn":        `{"version": 1, "absent": {"vg/a": {"first_se`,
		"no version":  `{"absent": {}}`,
		"not object":  `[1, 2]`,
		"wrong type":  `{"version": 1, "absent": {"vg/a": {"first_seen": 12}}}`,
		"zero length": ``,
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "state.json")
			if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Store{Path: p}.Load()
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), p) {
				t.Fatalf("%q: %v, want ErrCorrupt naming the file", body, err)
			}
		})
	}
}

// Concurrent updates (the daemon and a keel wipe by hand) never lose a
// record: the lock serialises the read-modify-write.
func TestUpdateSerialises(t *testing.T) {
	p := filepath.Join(t.TempDir(), "state.json")
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, err := Store{Path: p}.Update(func(st *state.State) error {
				st.See([]string{"vg/lv" + string(rune('a'+i))}, t0)
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	st, err := Store{Path: p}.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Absent) != 16 {
		t.Errorf("after 16 concurrent updates: %d records, want 16", len(st.Absent))
	}
}

func TestUpdateErrorWritesNothing(t *testing.T) {
	p := filepath.Join(t.TempDir(), "state.json")
	boom := errors.New("boom")
	if _, err := (Store{Path: p}).Update(func(st *state.State) error {
		st.See([]string{"vg/a"}, t0)
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("got %v, want boom", err)
	}
	if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state file written although fn failed: %v", err)
	}
}

// LoadSeeing writes only when a name is new, and keeps the first sight.
func TestLoadSeeing(t *testing.T) {
	p := filepath.Join(t.TempDir(), "state.json")
	s := Store{Path: p}
	st, err := s.LoadSeeing([]string{"vg/a"}, t0)
	if err != nil || !st.Absent["vg/a"].FirstSeen.Equal(t0) {
		t.Fatalf("first: %+v %v", st, err)
	}
	fi1, _ := os.Stat(p)
	if _, err := s.LoadSeeing([]string{"vg/a"}, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	fi2, _ := os.Stat(p)
	if !os.SameFile(fi1, fi2) {
		t.Error("state rewritten although no name was new")
	}
	st, err = s.LoadSeeing([]string{"vg/a", "vg/b"}, t0.Add(time.Hour))
	if err != nil || !st.Absent["vg/a"].FirstSeen.Equal(t0) || !st.Absent["vg/b"].FirstSeen.Equal(t0.Add(time.Hour)) {
		t.Errorf("second: %+v %v", st, err)
	}
}

// A state that reads but cannot be written (here its lock cannot be
// opened, as on a read-only file system) comes back as read, with
// ErrUnrecorded: the new name has no record, and nothing was written.
func TestLoadSeeingUnwritable(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "state.json")
	s := Store{Path: p}
	if _, err := s.LoadSeeing([]string{"vg/a"}, t0); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(p+".lock.blocked", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(p + ".lock"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p+".lock.blocked", p+".lock"); err != nil {
		t.Fatal(err)
	}
	st, err := s.LoadSeeing([]string{"vg/a", "vg/b"}, t0.Add(time.Hour))
	if !errors.Is(err, ErrUnrecorded) || st == nil {
		t.Fatalf("got %v, %v; want the state read and ErrUnrecorded", st, err)
	}
	if _, ok := st.Absent["vg/b"]; ok {
		t.Error("the unrecorded name has a record in the state returned")
	}
	if !st.Absent["vg/a"].FirstSeen.Equal(t0) {
		t.Errorf("the recorded name lost its record: %+v", st.Absent)
	}
	if got, err := s.Load(); err != nil || len(got.Absent) != 1 {
		t.Errorf("file after the failed write: %+v, %v", got, err)
	}
	// Nothing new to record: no write, no error.
	if _, err := s.LoadSeeing([]string{"vg/a"}, t0.Add(2*time.Hour)); err != nil {
		t.Errorf("a read with no new name: %v", err)
	}
}
