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
// never while it changes it. A pass over a slow PV spends its time in the
// probe (lvm reads every PV, seconds per I/O); cancelling it there loses
// nothing, since the probe only reads, and lets a bcache registration or a
// new desired state be served at once instead of after the probe's
// timeout. While Loop applies (each Exec.Apply, its verifying re-probes
// included, the bcache fast path's as well) the gate is shut: an action is
// never cancelled half-way by a newer trigger. Between two applies (after
// the fast path, before the full pass's apply) it is open again.
type Gate struct {
	mu        sync.Mutex
	cancel    context.CancelFunc
	applying  bool
	preempted bool
}

// NewGate returns a gate that calls cancel (the pass's context) when it
// preempts.
func NewGate(cancel context.CancelFunc) *Gate { return &Gate{cancel: cancel} }

// Preempt cancels the pass unless it is applying; it reports whether the
// pass is (now or already) preempted.
func (g *Gate) Preempt() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.applying && !g.preempted {
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

// apply runs fn with the gate shut, unless the pass was preempted before:
// then fn does not run and apply returns false. A nil gate always runs fn.
func (g *Gate) apply(fn func()) bool {
	if g == nil {
		fn()
		return true
	}
	g.mu.Lock()
	if g.preempted {
		g.mu.Unlock()
		return false
	}
	g.applying = true
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.applying = false
		g.mu.Unlock()
	}()
	fn()
	return true
}
