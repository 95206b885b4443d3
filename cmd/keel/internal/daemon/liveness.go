package daemon

import (
	"cmp"
	"context"
	"sync"
	"time"

	"github.com/keel-storage/keel/probes"
)

// Liveness is a probes.Runner that keeps count of the commands running
// through it, so that the daemon can tell a long pass that advances from
// a hung one. Every command has a timeout (its own, or the runner's), so a
// pass advances while its commands end or run within their timeouts: a
// PV that answers slowly makes a pass long, not hung. A command past its
// timeout (a child in uninterruptible sleep that the kill cannot end), or a
// pass that runs no command and ends none for a whole watchdog interval,
// is hung. The in-process dm ioctls of probes.DMRunner are served behind
// this runner, so they count as commands too.
type Liveness struct {
	Inner probes.Runner
	// Timeout is Inner's own per-command timeout (for commands that set
	// none); zero means none.
	Timeout time.Duration

	mu      sync.Mutex
	ended   uint64
	next    uint64
	running map[uint64]time.Time // deadline (zero: none) by command
}

// Run runs c through Inner and keeps count.
func (l *Liveness) Run(ctx context.Context, c probes.Cmd) (probes.Result, error) {
	var deadline time.Time
	if t := cmp.Or(c.Timeout, l.Timeout); t > 0 {
		deadline = time.Now().Add(t)
	}
	l.mu.Lock()
	if l.running == nil {
		l.running = map[uint64]time.Time{}
	}
	id := l.next
	l.next++
	l.running[id] = deadline
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		delete(l.running, id)
		l.ended++
		l.mu.Unlock()
	}()
	return l.Inner.Run(ctx, c)
}

// advanced reports whether commands advance at now: one ended since the
// count was last (ended is the count then), or some run and none is past
// its timeout. It also returns the count of ended commands.
func (l *Liveness) advanced(last uint64, now time.Time) (uint64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended > last {
		return l.ended, true
	}
	for _, d := range l.running {
		if !d.IsZero() && now.After(d) {
			return l.ended, false
		}
	}
	return l.ended, len(l.running) > 0
}

// keepAliveWhilePassing pings the systemd watchdog every interval while a
// pass runs (passing) and its commands advance (Liveness). A pass runs on
// the loop's goroutine, so the loop's own pings stop meanwhile; a slow PV
// can make a pass longer than WatchdogSec while every command still ends
// within its timeout. A hung pass still stops the pings, and systemd
// restarts keel.
func (d *Daemon) keepAliveWhilePassing(ctx context.Context, interval time.Duration, ping func() error) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var last uint64
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			n, ok := d.Liveness.advanced(last, now)
			last = n
			switch {
			case !d.passing.Load():
			case ok:
				_ = ping()
			case d.metrics.WipesInFlight() == 0:
				d.Log.Warn("a pass ran or ended no command within its timeout for a watchdog interval", "interval", interval.String())
			}
		}
	}
}
