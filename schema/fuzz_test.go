package schema

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoad feeds arbitrary bytes to the loader as one desired-state file.
// It must never panic; it either accepts the input, and then the effective
// desired state it prints loads again, or rejects it with an *Error whose
// every problem has a message and a position in the input.
func FuzzLoad(f *testing.F) {
	seeds, _ := filepath.Glob("../examples/*.cue")
	bad, _ := filepath.Glob(filepath.Join(badDir, "*.cue"))
	for _, p := range append(seeds, bad...) {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	l := NewLoader()
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := l.LoadFiles([]File{{Name: "fuzz.cue", Data: data}})
		if err == nil {
			eff, err := d.Effective()
			if err != nil {
				t.Fatalf("effective: %v", err)
			}
			if _, err := l.LoadFiles([]File{{Name: "effective.cue", Data: eff}}); err != nil {
				t.Fatalf("effective desired state does not load again: %v\n%s", err, eff)
			}
			return
		}
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("error is %T, want *Error: %v", err, err)
		}
		if len(e.Problems) == 0 {
			t.Fatal("*Error without problems")
		}
		for _, p := range e.Problems {
			if p.Msg == "" {
				t.Errorf("problem without message: %+v", p)
			}
			if p.Pos.File != "fuzz.cue" || p.Pos.Line < 1 {
				t.Errorf("problem without a position in the input: %s", p)
			}
		}
	})
}
