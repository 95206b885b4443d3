package schema

import (
	"os"
	"path/filepath"
	"testing"
)

// largestExample returns the biggest file in examples/.
func largestExample(b *testing.B) string {
	var best string
	var size int64
	for _, p := range examples(b) {
		st, err := os.Stat(p)
		if err != nil {
			b.Fatal(err)
		}
		if st.Size() > size {
			best, size = p, st.Size()
		}
	}
	return best
}

// BenchmarkLoadLargestExample reads, validates (CUE schema and keel's own
// checks) and decodes the largest example with a reused Loader, as the
// agent does on each reload.
func BenchmarkLoadLargestExample(b *testing.B) {
	p := largestExample(b)
	b.Logf("file: %s", filepath.Base(p))
	l := NewLoader()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Load(p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadColdLargestExample is one `keel vet` worth of work: a new
// Loader (fresh CUE context) per load.
func BenchmarkLoadColdLargestExample(b *testing.B) {
	p := largestExample(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := NewLoader().Load(p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadAllExamples loads each example in turn with one Loader.
func BenchmarkLoadAllExamples(b *testing.B) {
	ps := examples(b)
	l := NewLoader()
	b.ReportAllocs()
	for b.Loop() {
		for _, p := range ps {
			if _, err := l.Load(p); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkVetInvalid measures a rejection with problems to present (the
// corpus file with the most problems is small; this one exercises the
// disjunction merging).
func BenchmarkVetInvalid(b *testing.B) {
	p := filepath.Join(badDir, "threads-mixed-zero.cue")
	l := NewLoader()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Load(p); err == nil {
			b.Fatal("accepted")
		}
	}
}
