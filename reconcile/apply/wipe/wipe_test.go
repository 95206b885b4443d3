package wipe

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/keel-storage/keel/reconcile/plan/removal"
	"golang.org/x/sys/unix"
)

// fileDevice is a Device over a regular file: zeroes are written with pwrite
// and discards punch holes, since the block ioctls only work on block devices.
type fileDevice struct {
	f     *os.File
	zero  []byte
	mu    sync.Mutex
	calls [][2]uint64
}

func newFileDevice(t testing.TB, size int64, random bool) *fileDevice {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "disk.img"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if random {
		buf := make([]byte, size)
		rand.Read(buf)
		if _, err := f.Write(buf); err != nil {
			t.Fatal(err)
		}
	} else if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	return &fileDevice{f: f, zero: make([]byte, 1<<20)}
}

func (d *fileDevice) Size() (uint64, error) {
	fi, err := d.f.Stat()
	return uint64(fi.Size()), err
}

func (d *fileDevice) record(off, n uint64) {
	d.mu.Lock()
	d.calls = append(d.calls, [2]uint64{off, n})
	d.mu.Unlock()
}

func (d *fileDevice) ZeroOut(off, n uint64) error {
	d.record(off, n)
	for n > 0 {
		c := min(n, uint64(len(d.zero)))
		if _, err := d.f.WriteAt(d.zero[:c], int64(off)); err != nil {
			return err
		}
		off += c
		n -= c
	}
	return nil
}

func (d *fileDevice) Discard(off, n uint64) error {
	d.record(off, n)
	return unix.Fallocate(int(d.f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, int64(off), int64(n))
}

func allZero(t *testing.T, f *os.File) {
	t.Helper()
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if i := bytes.IndexFunc(b, func(r rune) bool { return r != 0 }); i >= 0 {
		t.Fatalf("byte %d of %d is not zero after wipe", i, len(b))
	}
}

func TestWipeZeroOutSteps(t *testing.T) {
	const size = 5<<20 + 512*3 // a short last step
	d := newFileDevice(t, size, true)
	var p Progress
	if err := Wipe(context.Background(), "vg/lv", d, removal.ModeZeroOut, 1<<20, &p); err != nil {
		t.Fatal(err)
	}
	allZero(t, d.f)
	if len(d.calls) != 6 {
		t.Fatalf("got %d ioctls, want 6: %v", len(d.calls), d.calls)
	}
	var next uint64
	for i, c := range d.calls {
		if c[0] != next {
			t.Fatalf("step %d starts at %d, want %d", i, c[0], next)
		}
		next += c[1]
	}
	if last := d.calls[5]; last[1] != 512*3 {
		t.Fatalf("last step %d bytes, want 1536", last[1])
	}
	s := p.Stat()
	if s.Done != size || s.Total != size || !p.Done() {
		t.Fatalf("progress %+v done=%v, want %d of %d and done", s, p.Done(), size, size)
	}
}

func TestWipeDiscard(t *testing.T) {
	d := newFileDevice(t, 3<<20, true)
	if err := Wipe(context.Background(), "vg/lv", d, removal.ModeDiscard, 1<<20, nil); err != nil {
		t.Fatal(err)
	}
	allZero(t, d.f)
	if len(d.calls) != 3 {
		t.Fatalf("got %d discards, want 3", len(d.calls))
	}
}

func TestWipeBadStepAndMode(t *testing.T) {
	d := newFileDevice(t, 1<<20, false)
	for _, step := range []uint64{0, 1000} {
		err := Wipe(context.Background(), "vg/lv", d, removal.ModeZeroOut, step, nil)
		if !errors.Is(err, ErrBadStep) {
			t.Errorf("step %d: got %v, want ErrBadStep", step, err)
		}
	}
	if err := Wipe(context.Background(), "vg/lv", d, "shred", 4096, nil); err == nil || !strings.Contains(err.Error(), "unknown mode") {
		t.Errorf("mode shred: got %v", err)
	}
	if len(d.calls) != 0 {
		t.Errorf("refused wipes issued %d calls", len(d.calls))
	}
}

// cancelDevice cancels its context after a number of steps.
type cancelDevice struct {
	*fileDevice
	after  int
	cancel context.CancelFunc
}

func (d *cancelDevice) ZeroOut(off, n uint64) error {
	if err := d.fileDevice.ZeroOut(off, n); err != nil {
		return err
	}
	if len(d.calls) == d.after {
		d.cancel()
	}
	return nil
}

func TestWipeStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := &cancelDevice{fileDevice: newFileDevice(t, 8<<20, false), after: 2, cancel: cancel}
	var p Progress
	err := Wipe(ctx, "vg/lv", d, removal.ModeZeroOut, 1<<20, &p)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if len(d.calls) != 2 || p.Stat().Done != 2<<20 || p.Done() {
		t.Fatalf("after cancel: %d calls, %d bytes done, done=%v; want 2 calls, 2 MiB", len(d.calls), p.Stat().Done, p.Done())
	}
}

type failDevice struct{ fileDevice }

func (d *failDevice) ZeroOut(off, n uint64) error {
	if off >= 1<<20 {
		return unix.EIO
	}
	return nil
}

func TestWipeReportsFailingStep(t *testing.T) {
	d := &failDevice{*newFileDevice(t, 4<<20, false)}
	err := Wipe(context.Background(), "vdovg/del-vm-100-disk-0", d, removal.ModeZeroOut, 1<<20, nil)
	if !errors.Is(err, unix.EIO) {
		t.Fatalf("got %v, want EIO", err)
	}
	for _, want := range []string{"vdovg/del-vm-100-disk-0", "zeroout", "byte 1048576"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

func TestProgressStat(t *testing.T) {
	now := time.Unix(1000, 0)
	p := Progress{now: func() time.Time { return now }}
	if s := p.Stat(); s.Rate != 0 || s.Left != 0 {
		t.Fatalf("before begin: %+v", s)
	}
	p.begin(100 << 20)
	now = now.Add(2 * time.Second)
	p.add(50 << 20)
	s := p.Stat()
	if s.Rate != 25<<20 || s.Left != 2*time.Second || s.Elapsed != 2*time.Second {
		t.Fatalf("half way: %+v, want 25 MiB/s and 2s left", s)
	}
	if bar := s.Bar(10); !strings.HasPrefix(bar, "[#####.....]  50.0% 50M/100M 25M/s left 2s") {
		t.Fatalf("bar %q", bar)
	}
	p.add(50 << 20)
	now = now.Add(time.Hour) // the rate freezes once done
	if s := p.Stat(); !p.Done() || s.Rate != 50<<20 || s.Left != 0 {
		t.Fatalf("finished: %+v", s)
	}
}

func TestProgressConcurrentReads(t *testing.T) {
	d := newFileDevice(t, 16<<20, false)
	var p Progress
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	var last uint64
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			s := p.Stat()
			if s.Done < last {
				t.Errorf("progress went back from %d to %d", last, s.Done)
			}
			last = s.Done
		}
	}()
	err := Wipe(context.Background(), "vg/lv", d, removal.ModeZeroOut, 512<<10, &p)
	cancel()
	wg.Wait()
	if err != nil || p.Stat().Done != 16<<20 {
		t.Fatalf("err %v, done %d", err, p.Stat().Done)
	}
}

func TestReportLogsAndBar(t *testing.T) {
	var p Progress
	p.begin(4 << 20)
	p.add(1 << 20)
	var logBuf bytes.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &logBuf, JSONFormat: true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	Report(ctx, &p, "vg/lv", 5*time.Millisecond, false, nil, log)
	out := logBuf.String()
	for _, want := range []string{`"@message":"wipe progress"`, `"lv":"vg/lv"`, `"done_bytes":1048576`, `"total_bytes":4194304`, `"rate_bytes_per_s"`, `"left"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
	var term bytes.Buffer
	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	Report(ctx2, &p, "vg/lv", 5*time.Millisecond, true, &term, hclog.NewNullLogger())
	if s := term.String(); !strings.HasPrefix(s, "\rvg/lv [#######") || !strings.HasSuffix(s, "\n") {
		t.Errorf("terminal output %q", s)
	}
}

func TestStepFor(t *testing.T) {
	for _, tc := range []struct {
		mode     removal.Mode
		want     uint64
		ql       QueueLimits
		step     uint64
		note     string
		errMatch string
	}{
		{removal.ModeZeroOut, 0, QueueLimits{Dev: "dm-1", WriteZeroesMax: 1 << 30}, DefaultStep, "", ""},
		{removal.ModeZeroOut, 32 << 20, QueueLimits{Dev: "dm-1", WriteZeroesMax: 8 << 20}, 8 << 20, "step reduced", ""},
		{removal.ModeZeroOut, 32 << 20, QueueLimits{Dev: "dm-1"}, 32 << 20, "writes zero pages", ""},
		{removal.ModeZeroOut, 100, QueueLimits{Dev: "dm-1"}, 0, "", "multiple of 512"},
		{removal.ModeDiscard, 32 << 20, QueueLimits{Dev: "dm-2", DiscardMax: 4096}, 32 << 20, "max_discard 1", ""},
		{removal.ModeDiscard, 32 << 20, QueueLimits{Dev: "dm-2", DiscardMax: 16 << 20}, 32 << 20, "", ""},
		{removal.ModeDiscard, 32 << 20, QueueLimits{Dev: "dm-2"}, 0, "", "does not support discard"},
	} {
		step, notes, err := StepFor(tc.mode, tc.want, tc.ql)
		if tc.errMatch != "" {
			if err == nil || !strings.Contains(err.Error(), tc.errMatch) {
				t.Errorf("%s %d %+v: err %v, want %q", tc.mode, tc.want, tc.ql, err, tc.errMatch)
			}
			continue
		}
		if err != nil || step != tc.step {
			t.Errorf("%s %d %+v: step %d err %v, want %d", tc.mode, tc.want, tc.ql, step, err, tc.step)
		}
		joined := strings.Join(notes, "\n")
		if (tc.note == "") != (joined == "") || !strings.Contains(joined, tc.note) {
			t.Errorf("%s %d %+v: notes %q, want %q", tc.mode, tc.want, tc.ql, joined, tc.note)
		}
	}
}
