package wipe

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/keel-storage/keel/lvm/units"
)

// Progress counts the bytes of one wipe. Its counters are atomic so the
// daemon can read them from another goroutine (for a metric) while Wipe runs.
// The zero value is ready to use.
type Progress struct {
	total   atomic.Uint64
	done    atomic.Uint64
	resumed atomic.Uint64 // bytes already done when this run began
	startNs atomic.Int64
	endNs   atomic.Int64
	now     func() time.Time // for tests; nil means time.Now
}

// Stat is one reading of a Progress.
type Stat struct {
	Done    uint64        // bytes cleared so far
	Total   uint64        // bytes to clear
	Elapsed time.Duration // since the first step started
	Rate    float64       // bytes per second so far (0 before any time has passed)
	Left    time.Duration // estimated time left (0 when unknown or finished)
}

func (p *Progress) clock() time.Time {
	if p.now != nil {
		return p.now()
	}
	return time.Now()
}

func (p *Progress) begin(total uint64) { p.beginAt(total, 0) }

// beginAt starts counting a wipe resumed at byte done: those bytes count
// as done, and the rate is measured from here on.
func (p *Progress) beginAt(total, done uint64) {
	p.total.Store(total)
	p.done.Store(done)
	p.resumed.Store(done)
	p.endNs.Store(0)
	p.startNs.Store(p.clock().UnixNano())
}

func (p *Progress) add(n uint64) {
	if p.done.Add(n) >= p.total.Load() {
		p.endNs.Store(p.clock().UnixNano())
	}
}

// Done reports whether every byte has been cleared.
func (p *Progress) Done() bool { return p.endNs.Load() != 0 }

// Stat reads the counters.
func (p *Progress) Stat() Stat {
	s := Stat{Done: p.done.Load(), Total: p.total.Load()}
	start := p.startNs.Load()
	if start == 0 {
		return s
	}
	end := p.endNs.Load()
	if end == 0 {
		end = p.clock().UnixNano()
	}
	s.Elapsed = time.Duration(end - start)
	if s.Elapsed > 0 {
		s.Rate = float64(s.Done-p.resumed.Load()) / s.Elapsed.Seconds()
	}
	if s.Rate > 0 && s.Done < s.Total {
		s.Left = time.Duration(float64(s.Total-s.Done) / s.Rate * float64(time.Second))
	}
	return s
}

// Bar renders s as a one-line progress bar of the given width (in cells).
func (s Stat) Bar(width int) string {
	frac := 0.0
	if s.Total > 0 {
		frac = float64(s.Done) / float64(s.Total)
	}
	filled := int(frac * float64(width))
	left := "--"
	if s.Left > 0 || s.Done >= s.Total {
		left = s.Left.Round(time.Second).String()
	}
	return fmt.Sprintf("[%s%s] %5.1f%% %s/%s %s/s left %s",
		strings.Repeat("#", filled), strings.Repeat(".", width-filled), frac*100,
		units.FormatSize(s.Done), units.FormatSize(s.Total), units.FormatSize(uint64(s.Rate)), left)
}

// Report prints p's progress every interval until ctx ends, then once more.
// With term set it redraws a bar on w with a carriage return; otherwise it
// logs a structured line to log (w is then unused). It is meant to run in
// its own goroutine next to Wipe.
func Report(ctx context.Context, p *Progress, name string, interval time.Duration, term bool, w io.Writer, log hclog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	emit := func(final bool) {
		s := p.Stat()
		if term {
			end := ""
			if final {
				end = "\n"
			}
			fmt.Fprintf(w, "\r%s %s%s", name, s.Bar(30), end)
			return
		}
		log.Info("wipe progress", "lv", name, "done_bytes", s.Done, "total_bytes", s.Total,
			"rate_bytes_per_s", uint64(s.Rate), "left", s.Left.Round(time.Second).String())
	}
	for {
		select {
		case <-ctx.Done():
			emit(true)
			return
		case <-t.C:
			emit(false)
		}
	}
}
