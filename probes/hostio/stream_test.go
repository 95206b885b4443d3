package hostio

import (
	"os"
	"testing"
	"testing/synctest"
	"time"
)

// TestGrowingOutputBacksOff: while a command writes nothing, the reader's
// looks at its output file grow apart up to streamPollMax; output is seen at
// most streamPollMax after it was written, and the command's exit is seen at
// once, with all it wrote.
func TestGrowingOutputBacksOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, err := os.CreateTemp(t.TempDir(), "out")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		ended := make(chan struct{})
		const silence = 800 * time.Millisecond
		var wroteAt, endedAt time.Time
		go func() {
			time.Sleep(silence)
			wroteAt = time.Now()
			if _, err := f.WriteString("first"); err != nil {
				t.Error(err)
			}
			time.Sleep(silence)
			if _, err := f.WriteString(" second"); err != nil {
				t.Error(err)
			}
			endedAt = time.Now()
			close(ended)
		}()
		g := &growingOutput{f: f, ended: ended}
		b, done := g.next()
		if string(b) != "first" || done {
			t.Fatalf("first next: %q, done %v", b, done)
		}
		if late := time.Since(wroteAt); late > streamPollMax {
			t.Errorf("output seen %v after it was written, want at most %v", late, streamPollMax)
		}
		// At a fixed streamPollMin the silence would take 200 looks.
		if most := int(silence/streamPollMax) + 6; g.looks > most {
			t.Errorf("%d looks in %v of silence, want at most %d", g.looks, silence, most)
		}
		for !done {
			b, done = g.next()
		}
		if string(b) != "first second" {
			t.Fatalf("at the end: %q", b)
		}
		if late := time.Since(endedAt); late != 0 {
			t.Errorf("the exit seen %v after it, want at once", late)
		}
	})
}
