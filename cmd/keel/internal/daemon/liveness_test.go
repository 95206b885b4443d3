package daemon

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/keel-storage/keel/cmd/keel/internal/alerts"
	"github.com/keel-storage/keel/probes/hostio"
)

// stuckRunner runs every command until release is closed, whatever its
// context says: a child in uninterruptible sleep, which no kill ends.
type stuckRunner struct{ release chan struct{} }

func (r stuckRunner) Run(context.Context, hostio.Cmd) (hostio.Result, error) {
	<-r.release
	return hostio.Result{}, nil
}

func TestLivenessAdvanced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := stuckRunner{release: make(chan struct{})}
		l := &Liveness{Inner: r, Timeout: time.Hour}
		const window = time.Minute
		if l.advanced(time.Now(), window) {
			t.Error("no command ran or ended: advanced")
		}
		done := make(chan struct{})
		go func() {
			_, _ = l.Run(context.Background(), hostio.Cmd{Name: "lvm", Args: []string{"fullreport"}})
			close(done)
		}()
		for {
			l.mu.Lock()
			n := len(l.running)
			l.mu.Unlock()
			if n == 1 {
				break
			}
			time.Sleep(time.Millisecond)
		}
		if !l.advanced(time.Now(), window) {
			t.Error("a command within its timeout: not advanced")
		}
		if l.advanced(time.Now().Add(2*time.Hour), window) {
			t.Error("a command past its timeout: advanced")
		}
		close(r.release)
		<-done
		if !l.advanced(time.Now(), window) {
			t.Error("a command ended within the window: not advanced")
		}
		if l.advanced(time.Now().Add(window+time.Second), window) {
			t.Error("nothing ended within the window and nothing runs: advanced")
		}
	})
}

// A pass whose commands end a little more than an interval apart (a
// desired state compiled again, a plan, between them) keeps its pings well
// within WatchdogSec of each other. Before, the pass was judged once an
// interval on whether a command had ended since the last look: a look
// between two such commands skipped its ping, and two pings came a whole
// WatchdogSec apart, a race with systemd's timer.
func TestKeepAliveAcrossAGap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &Daemon{Log: hclog.NewNullLogger(), metrics: alerts.NewMetrics(),
			Liveness: &Liveness{Inner: quickRunner{}, Timeout: time.Second}}
		const interval = 80 * time.Millisecond // WatchdogSec 160ms
		var mu sync.Mutex
		var pings []time.Time
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go d.keepAliveWhilePassing(ctx, interval, func() error {
			mu.Lock()
			pings = append(pings, time.Now())
			mu.Unlock()
			return nil
		})
		d.passing.Store(true)
		// A command every 100ms (an interval and a quarter), for 1.5 s.
		for range 15 {
			_, _ = d.Liveness.Run(ctx, hostio.Cmd{Name: "lvm", Args: []string{"version"}})
			time.Sleep(100 * time.Millisecond)
		}
		d.passing.Store(false)
		mu.Lock()
		defer mu.Unlock()
		if len(pings) < 10 {
			t.Fatalf("%d pings in 1.5 s at interval %v", len(pings), interval)
		}
		for i := 1; i < len(pings); i++ {
			// WatchdogSec is 2 intervals; the ping pattern leaves at most about
			// half an interval between two pings.
			if gap := pings[i].Sub(pings[i-1]); gap > interval*3/2 {
				t.Errorf("ping %d came %v after the one before (interval %v, WatchdogSec %v)", i, gap, interval, 2*interval)
			}
		}
	})
}

// quickRunner ends every command at once.
type quickRunner struct{}

func (quickRunner) Run(context.Context, hostio.Cmd) (hostio.Result, error) {
	return hostio.Result{}, nil
}

// A pass whose command runs within its timeout keeps the watchdog pinged;
// once the command is past its timeout (it did not end when killed), the
// pings stop; between passes this goroutine does not ping (the loop does).
func TestKeepAliveWhilePassing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := stuckRunner{release: make(chan struct{})}
		d := &Daemon{Log: hclog.NewNullLogger(), metrics: alerts.NewMetrics(),
			Liveness: &Liveness{Inner: r, Timeout: 300 * time.Millisecond}}
		var pings atomic.Int64
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go d.keepAliveWhilePassing(ctx, 20*time.Millisecond, func() error { pings.Add(1); return nil })

		time.Sleep(100 * time.Millisecond)
		if n := pings.Load(); n != 0 {
			t.Errorf("no pass running: %d pings, want 0", n)
		}
		d.passing.Store(true)
		go func() { _, _ = d.Liveness.Run(ctx, hostio.Cmd{Name: "lvm", Args: []string{"fullreport"}}) }()
		time.Sleep(200 * time.Millisecond)
		within := pings.Load()
		if within < 3 {
			t.Errorf("a command within its timeout: %d pings in 200ms at 20ms, want several", within)
		}
		time.Sleep(250 * time.Millisecond) // the command is now past its 300ms
		before := pings.Load()
		time.Sleep(200 * time.Millisecond)
		if after := pings.Load(); after != before {
			t.Errorf("a command past its timeout: %d pings more, want none", after-before)
		}
		close(r.release)
	})
}

// streamRunner streams one output, calling inside while consume runs.
type streamRunner struct{ inside func() }

func (r streamRunner) Run(_ context.Context, c hostio.Cmd) (hostio.Result, error) {
	if c.Consume == nil {
		return hostio.Result{}, errors.New("not streamed")
	}
	c.Consume(func() ([]byte, bool) { r.inside(); return []byte("out"), true })
	return hostio.Result{Stdout: []byte("out")}, nil
}

// TestLivenessStreams: a streamed command goes through to the runner
// below and counts as running until it ends.
func TestLivenessStreams(t *testing.T) {
	var l *Liveness
	running := -1
	l = &Liveness{Inner: streamRunner{inside: func() {
		l.mu.Lock()
		running = len(l.running)
		l.mu.Unlock()
	}}}
	var got []byte
	c := hostio.Cmd{Name: "lvm", Consume: func(next func() ([]byte, bool)) { got, _ = next() }}
	res, err := l.Run(context.Background(), c)
	if err != nil || string(res.Stdout) != "out" || string(got) != "out" {
		t.Fatalf("Run: %q, consume %q, %v", res.Stdout, got, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if running != 1 || len(l.running) != 0 || l.lastEnd.IsZero() {
		t.Fatalf("running %d while streamed, %d after, last end %v", running, len(l.running), l.lastEnd)
	}
}
