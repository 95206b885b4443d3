package probes

import (
	"context"
	"errors"
	"io"
	"os"
	"slices"
	"time"
)

// Streamer is a Runner that can show a command's standard output while the
// command runs. RunStream starts c and calls consume, in another goroutine,
// with next: each call of next returns all the output written so far,
// blocking until there is more than the call before returned or the
// command has ended; done is true once the command has ended and out is
// all of its output. RunStream returns, once both the command and consume
// have ended, the Result and error Run would have returned.
//
// It lets the probe decode `lvm fullreport` as LVM writes it: at 2,000
// LVs LVM writes its 7.7 MB report over the last second or two of its run
// (docs/benchmark-history.md), and decoding it after the exit was the
// largest part of `keel check` beyond the report itself.
type Streamer interface {
	Runner
	RunStream(ctx context.Context, c Cmd, consume func(next func() (out []byte, done bool))) (Result, error)
}

// RunStream runs c through r with consume as Streamer.RunStream does when r
// is a Streamer; through any other Runner, consume gets all of c's output
// in one call of next once c has ended (and nothing when c could not run).
// Runners that wrap another call it to pass streaming on.
func RunStream(ctx context.Context, r Runner, c Cmd, consume func(next func() ([]byte, bool))) (Result, error) {
	if s, ok := r.(Streamer); ok {
		return s.RunStream(ctx, c, consume)
	}
	res, err := r.Run(ctx, c)
	if err == nil {
		whole(res.Stdout, consume)
	}
	return res, err
}

// whole calls consume with a next that returns out, done, at once.
func whole(out []byte, consume func(next func() ([]byte, bool))) {
	consume(func() ([]byte, bool) { return out, true })
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

// next is Streamer's next over f.
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
