package daemon

import (
	"cmp"
	"context"
	"sync"
	"time"

	"github.com/keel-storage/keel/probes/hostio"
)

// Liveness is a hostio.Runner that keeps count of the commands running
// through it, so that the daemon can tell a long pass that advances from
// a hung one. Every command has a timeout (its own, or the runner's), so a
// pass advances while its commands end or run within their timeouts: a
// PV that answers slowly makes a pass long, not hung. A command past its
// timeout (a child in uninterruptible sleep that the kill cannot end), or a
// pass that runs no command and ends none for a whole watchdog interval,
// is hung. A command keel runs to its end (hostio.Unbounded: a pvmove, a
// VDO activation replaying its journal) has no deadline, so it counts as
// running for as long as it runs. The in-process dm ioctls of hostio.DMRunner are served behind
// this runner, so they count as commands too.
type Liveness struct {
	Inner hostio.Runner
	// Timeout is Inner's own per-command timeout (for commands that set
	// none); zero means none.
	Timeout time.Duration

	mu      sync.Mutex
	lastEnd time.Time // when a command last ended
	next    uint64
	running map[uint64]time.Time // deadline (zero: none) by command
}

// Run runs c through Inner and keeps count.
func (l *Liveness) Run(ctx context.Context, c hostio.Cmd) (hostio.Result, error) {
	defer l.begin(c)()
	return l.Inner.Run(ctx, c)
}

// begin counts c as running and returns what counts it ended.
func (l *Liveness) begin(c hostio.Cmd) (end func()) {
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
	return func() {
		l.mu.Lock()
		delete(l.running, id)
		l.lastEnd = time.Now()
		l.mu.Unlock()
	}
}

// advanced reports whether commands advance at now: one ended within the
// window before now, or some run and none is past its timeout.
func (l *Liveness) advanced(now time.Time, window time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.lastEnd.IsZero() && now.Sub(l.lastEnd) < window {
		return true
	}
	for _, d := range l.running {
		if !d.IsZero() && now.After(d) {
			return false
		}
	}
	return len(l.running) > 0
}

// keepAliveWhilePassing pings the systemd watchdog while a pass runs
// (passing) and its commands advance (Liveness). A pass runs on the
// serving goroutine, and the loop pings only when no pass runs; a slow PV
// can make a pass longer than WatchdogSec while every command still ends
// within its timeout. interval is half of WatchdogSec (the interval
// sd_watchdog_enabled(3) advises pinging at). It looks four times an
// interval and pings when a command ended within the last interval or one
// runs within its timeout: judged only once an interval, a single look
// that fell in a stretch without commands (the desired state compiled
// again, a plan) left 2 intervals, the whole WatchdogSec, between two
// pings, and systemd's timer raced the next one. A hung pass still stops
// the pings one interval after its last command ended (or when its
// command passes its timeout), and systemd restarts keel WatchdogSec
// later.
func (d *Daemon) keepAliveWhilePassing(ctx context.Context, interval time.Duration, ping func() error) {
	t := time.NewTicker(max(interval/4, time.Millisecond))
	defer t.Stop()
	warned := false
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			switch {
			case !d.passing.Load():
				warned = false
			case d.Liveness.advanced(now, interval):
				warned = false
				_ = ping()
			case d.metrics.WipesInFlight() == 0 && !warned:
				warned = true
				d.Log.Warn("a pass ran or ended no command within its timeout for a watchdog interval", "interval", interval.String())
			}
		}
	}
}
