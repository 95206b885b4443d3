package converge

import (
	"context"
	"errors"
	"sync"
)

// ErrPreempted ends a pass that a Gate cancelled before it changed
// anything: a newer trigger (a changed desired state, a bcache
// registration) is served first, and the pass is run again after it.
var ErrPreempted = errors.New("pass preempted before it changed anything")

// Gate lets the daemon cancel a pass while it only reads the host, and
// never once it has begun to change it. A pass over a slow PV spends its
// time in the probe (lvm reads every PV, seconds per I/O); cancelling it
// there loses nothing, since nothing was applied and the probe only reads,
// and lets a bcache registration or a new desired state be served at once
// instead of after the probe's timeout. Once Loop applies (Exec.Apply,
// the bcache fast path included) the gate is shut: an action is never
// cancelled half-way by a newer trigger.
type Gate struct {
	mu        sync.Mutex
	cancel    context.CancelFunc
	acting    bool
	preempted bool
}

// NewGate returns a gate that calls cancel (the pass's context) when it
// preempts.
func NewGate(cancel context.CancelFunc) *Gate { return &Gate{cancel: cancel} }

// Preempt cancels the pass unless it has begun to apply; it reports
// whether the pass is (now or already) preempted.
func (g *Gate) Preempt() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.acting && !g.preempted {
		g.preempted = true
		g.cancel()
	}
	return g.preempted
}

// Preempted reports whether Preempt cancelled the pass (never for a nil
// gate).
func (g *Gate) Preempted() bool {
	if g == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.preempted
}

// act shuts the gate before the pass applies anything; false means the
// pass was preempted and must not apply. A nil gate always lets it act.
func (g *Gate) act() bool {
	if g == nil {
		return true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.preempted {
		return false
	}
	g.acting = true
	return true
}
