package converge

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/keel-storage/keel/reconcile/atomicfile"
	"github.com/keel-storage/keel/schema"
	"github.com/rogpeppe/go-internal/txtar"
)

// LastGoodFile is the name, in keel's state directory, of the copy of the
// last desired state that loaded: keel activate falls back to it when the
// one on disk does not validate (a typo in a pushed change, a field a
// downgraded keel does not know), so that a boot brings the stack up as
// the daemon, which keeps the last good one in memory, would run it.
const LastGoodFile = "last-good-desired.txtar"

// LastGood is the saved copy of a desired state that loaded.
type LastGood struct {
	// Path is the copy's file, Saved when it was written.
	Path  string
	Saved time.Time
}

// lastGoodComment heads the copy; it names the desired-state paths the
// files were read from, and LoadLastGood takes only a copy of its own
// paths: a `keel apply -c` of another file by hand must not become what
// the next boot brings up.
func lastGoodComment(paths []string) string {
	return "keel: the last desired state that loaded (keel activate falls back to it)\npaths: " + strings.Join(paths, " ") + "\n"
}

// copyPaths returns the paths a copy's comment names.
func copyPaths(comment []byte) string {
	_, p, _ := strings.Cut(string(comment), "\npaths: ")
	return strings.TrimSpace(p)
}

// saveLastGood writes files, the desired state that just loaded from
// paths, to path as a txtar archive (each file under its own path),
// atomically, and only when the copy differs: the daemon loads at every
// reload.
func saveLastGood(path string, paths []string, files []schema.File) error {
	a := &txtar.Archive{Comment: []byte(lastGoodComment(paths))}
	for _, f := range files {
		a.Files = append(a.Files, txtar.File{Name: f.Name, Data: f.Data})
	}
	b := txtar.Format(a)
	// A file with a line of txtar's own "-- name --" form would come back
	// split: refuse to keep a copy that does not read back the same.
	back := txtar.Parse(b)
	if len(back.Files) != len(files) {
		return fmt.Errorf("last good desired state %s: a file has a line txtar reads as a file name; no copy kept", path)
	}
	for i, f := range back.Files {
		if f.Name != files[i].Name || !bytes.Equal(f.Data, files[i].Data) && !bytes.Equal(f.Data, append(slices.Clip(files[i].Data), '\n')) {
			return fmt.Errorf("last good desired state %s: %s does not read back the same; no copy kept", path, files[i].Name)
		}
	}
	if old, err := os.ReadFile(path); err == nil && string(old) == string(b) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("last good desired state %s: %w", path, err)
	}
	if err := atomicfile.Write(path, b, 0o600); err != nil {
		return fmt.Errorf("last good desired state: %w", err)
	}
	return nil
}

// LoadLastGood puts the saved copy of the last desired state that loaded
// in force, validated again by this keel: for keel activate, when the
// desired state on disk is invalid. The config.invalid finding of the
// failed load stays. It fails when the loop keeps no copy (Wiring.LastGood
// unset), when there never was a good one, when the copy is of other
// desired-state paths, or when this keel does not accept the copy either.
func (l *Loop) LoadLastGood() (LastGood, error) {
	if l.lastGood == "" {
		return LastGood{}, fmt.Errorf("no last good desired state kept")
	}
	st, err := os.Stat(l.lastGood)
	if err != nil {
		return LastGood{}, fmt.Errorf("last good desired state: %w", err)
	}
	a, err := txtar.ParseFile(l.lastGood)
	if err != nil {
		return LastGood{}, fmt.Errorf("last good desired state: %w", err)
	}
	if want := lastGoodComment(l.Paths()); string(a.Comment) != want {
		return LastGood{}, fmt.Errorf("last good desired state %s: a copy of another desired state (%s), not of %s",
			l.lastGood, copyPaths(a.Comment), strings.Join(l.Paths(), " "))
	}
	if len(a.Files) == 0 {
		return LastGood{}, fmt.Errorf("last good desired state %s: no file in it", l.lastGood)
	}
	files := make([]schema.File, len(a.Files))
	for i, f := range a.Files {
		files[i] = schema.File{Name: f.Name, Data: f.Data}
	}
	cfg, err := l.evaluate(files)
	if err != nil {
		return LastGood{}, fmt.Errorf("last good desired state %s: %w", l.lastGood, err)
	}
	l.adopt(cfg, files)
	return LastGood{Path: l.lastGood, Saved: st.ModTime()}, nil
}
