package hostio

import (
	"errors"
	"io"
	"os"
	"slices"
	"time"
)

// ConsumeWhole hands c.Consume, when it is set, all of out at once, done:
// what a runner that answers c without running it (a cache, the dm
// ioctls) does, so that its caller sees the answer as it sees a streamed
// one.
func (c Cmd) ConsumeWhole(out []byte) {
	if c.Consume != nil {
		c.Consume(func() ([]byte, bool) { return out, true })
	}
}

// streamPollMin and streamPollMax bound how long next waits before it
// looks at the output file again while the command runs. A file, unlike a
// pipe, cannot wake its reader. LVM writes a report in bursts: a
// subreport's rows are buffered until the subreport is complete
// (dm_report_output in lvm2's libdm/libdm-report.c), so at thousands of LVs
// a second can pass with nothing to read. Each look that finds nothing
// doubles the wait up to streamPollMax, and a look that finds output sets it
// back to streamPollMin: while LVM writes, the decoding keeps up; while it
// does not, the reader wakes a few dozen times instead of hundreds, each wake
// a timer, two reads and the scheduler's search for work on a CPU LVM could
// use. The command's exit wakes next at once, so the wait never delays the
// end of a pass.
const (
	streamPollMin = 4 * time.Millisecond
	streamPollMax = 32 * time.Millisecond
)

// growingOutput reads the output file f of a running command from where it
// last stopped (next); ended closes when the command has exited.
type growingOutput struct {
	f     *os.File
	ended <-chan struct{}
	// stop, when not nil, closes when the command is left to end on its
	// own (Cmd.ReadOnly): next then reports the end at once.
	stop <-chan struct{}
	buf  []byte
	done bool
	err  error // reading f failed; then done
	// poll is the wait after the next look that finds nothing (0 is
	// streamPollMin); looks counts the looks that found nothing.
	poll  time.Duration
	looks int
}

// next is Cmd.Consume's next over f.
func (g *growingOutput) next() ([]byte, bool) {
	var timer *time.Timer
	for !g.done {
		exited := false
		select {
		case <-g.ended:
			exited = true // what it wrote is all in f now: read to the end
		case <-g.stop:
			g.done = true // left behind: what it wrote is not used
			continue
		default:
		}
		grew, err := g.read()
		switch {
		case err != nil:
			g.err, g.done = err, true
		case exited && !grew:
			g.done = true
		case grew:
			g.poll = streamPollMin
			return g.buf, false
		default:
			g.looks++
			wait := max(g.poll, streamPollMin)
			g.poll = min(2*wait, streamPollMax)
			if timer == nil {
				timer = time.NewTimer(wait)
				defer timer.Stop()
			} else {
				timer.Reset(wait)
			}
			select {
			case <-g.ended:
			case <-g.stop:
			case <-timer.C:
			}
		}
	}
	return g.buf, true
}

// read appends what f holds beyond buf and reports whether there was any.
// A memfd's size moves only after the bytes of a write are in it (shmem's
// write_end), so what is read is what the command wrote.
func (g *growingOutput) read() (bool, error) {
	grew := false
	for {
		if len(g.buf) == cap(g.buf) {
			g.buf = slices.Grow(g.buf, max(64<<10, cap(g.buf)))
		}
		n, err := g.f.ReadAt(g.buf[len(g.buf):cap(g.buf)], int64(len(g.buf)))
		g.buf = g.buf[:len(g.buf)+n]
		grew = grew || n > 0
		if err != nil || n == 0 {
			if err != nil && !errors.Is(err, io.EOF) {
				return grew, err
			}
			return grew, nil
		}
	}
}
