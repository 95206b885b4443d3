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

// streamPoll is how long next waits before it looks at the output file
// again while the command runs. A file, unlike a pipe, cannot wake its
// reader; a few milliseconds are nothing beside the seconds a large report
// takes, and the looks cost nothing while LVM writes (each finds more).
const streamPoll = 4 * time.Millisecond

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
			return g.buf, false
		default:
			if timer == nil {
				timer = time.NewTimer(streamPoll)
				defer timer.Stop()
			} else {
				timer.Reset(streamPoll)
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
