package daemon

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/keel-storage/keel/cmd/keel/internal/alerts"
	"github.com/keel-storage/keel/probes"
)

// stuckRunner runs every command until release is closed, whatever its
// context says: a child in uninterruptible sleep, which no kill ends.
type stuckRunner struct{ release chan struct{} }

func (r stuckRunner) Run(context.Context, probes.Cmd) (probes.Result, error) {
	<-r.release
	return probes.Result{}, nil
}

func TestLivenessAdvanced(t *testing.T) {
	r := stuckRunner{release: make(chan struct{})}
	l := &Liveness{Inner: r, Timeout: time.Hour}
	now := time.Now()
	if _, ok := l.advanced(0, now); ok {
		t.Error("no command ran or ended: advanced")
	}
	done := make(chan struct{})
	go func() {
		_, _ = l.Run(context.Background(), probes.Cmd{Name: "lvm", Args: []string{"fullreport"}})
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
	if _, ok := l.advanced(0, time.Now()); !ok {
		t.Error("a command within its timeout: not advanced")
	}
	if _, ok := l.advanced(0, time.Now().Add(2*time.Hour)); ok {
		t.Error("a command past its timeout: advanced")
	}
	close(r.release)
	<-done
	n, ok := l.advanced(0, time.Now().Add(2*time.Hour))
	if !ok || n != 1 {
		t.Errorf("a command ended: advanced %v, count %d (want true, 1)", ok, n)
	}
	if _, ok := l.advanced(n, time.Now()); ok {
		t.Error("nothing ended since and nothing runs: advanced")
	}
}

// A pass whose command runs within its timeout keeps the watchdog pinged;
// once the command is past its timeout (it did not end when killed), the
// pings stop; between passes this goroutine does not ping (the loop does).
func TestKeepAliveWhilePassing(t *testing.T) {
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
	go func() { _, _ = d.Liveness.Run(ctx, probes.Cmd{Name: "lvm", Args: []string{"fullreport"}}) }()
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
}
