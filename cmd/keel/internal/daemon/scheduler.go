package daemon

import "time"

// scheduler makes the daemon's decisions: which trigger is served next,
// whether the serve that runs is preempted, how triggers that wait are
// folded into one. It runs no goroutine, reads no clock and does no I/O:
// Run feeds it events (a trigger, the end of a serve) and carries out what
// it decides. One trigger is served at a time; the triggers that come
// meanwhile wait in pending, folded into one, and a changed desired state,
// a SIGHUP or a bcache registration preempts a serve that is still only
// reading the host (converge.Gate), at most maxPreemptions times in a row,
// so that a steady stream of triggers cannot starve full passes.
type scheduler struct {
	// debounce is how long a queued trigger settles before it is served
	// (Daemon.Debounce); a fast one settles fastDebounce.
	debounce time.Duration
	// running is the trigger being served (nil: idle); preemptible says
	// whether its serve has a gate.
	running     *trigger
	preemptible bool
	// pending folds the triggers that came while running was served.
	pending *trigger
	// preempted counts the serves preempted in a row.
	preempted int
}

// maxPreemptions bounds the passes preempted in a row.
const maxPreemptions = 3

// fastDebounce is the settling time of a fast trigger whatever the
// Debounce: a bcache registration's add and change uevents come within
// tens of milliseconds, and its tunables are wanted at once.
const fastDebounce = 50 * time.Millisecond

// origin is where a trigger comes from.
type origin int

const (
	// fromQueue: the file watches, uevents and the metadata poll, through
	// the trigger queue. Served after a debounce, with every trigger queued
	// meanwhile folded in.
	fromQueue origin = iota
	// fromSignal: a SIGHUP, served at once.
	fromSignal
	// fromResync: the resync timer, served at once.
	fromResync
)

// decision is what Run does after an event, in this order.
type decision struct {
	// preempt asks the gate of the running serve to preempt it.
	preempt bool
	// settle is how long to wait before the next step (a debounce).
	settle time.Duration
	// drain folds every trigger queued meanwhile (queued) before start.
	drain bool
	// start serves the pending trigger (next).
	start bool
}

// add takes a new trigger t. While a serve runs, t waits in pending, and
// preempts the serve when t asks for something promptly (a changed desired
// state, a SIGHUP, a bcache registration) and the serve may be preempted.
// Otherwise t is served: a queued one after it settled and with what was
// queued behind it.
func (s *scheduler) add(t trigger, from origin) decision {
	s.pending = fold(s.pending, t)
	if s.running != nil {
		return decision{preempt: s.preemptible && (t.reload || t.fast)}
	}
	if from == fromQueue {
		wait := s.debounce
		if t.fast {
			wait = fastDebounce
		}
		return decision{settle: wait, drain: true, start: true}
	}
	return decision{start: true}
}

// queued folds a trigger drained from the queue into pending: it neither
// preempts nor starts anything.
func (s *scheduler) queued(t trigger) { s.pending = fold(s.pending, t) }

// next starts serving the pending trigger and returns it, and whether its
// serve may be preempted. ok is false when nothing is pending or a serve
// already runs.
func (s *scheduler) next() (t trigger, preemptible, ok bool) {
	if s.running != nil || s.pending == nil {
		return trigger{}, false, false
	}
	t, s.pending = *s.pending, nil
	s.running, s.preemptible = &t, s.preempted < maxPreemptions
	return t, s.preemptible, true
}

// idle reports whether no serve runs.
func (s *scheduler) idle() bool { return s.running == nil }

// outcome is how a serve ended, as its goroutine saw it.
type outcome struct {
	// preempted: its gate preempted it before it changed anything.
	preempted bool
	// reloaded: its SIGHUP's desired state was read again and READY=1 sent.
	reloaded bool
	// fastOwed: it owed the bcache fast path and did not run it to its end.
	fastOwed bool
}

// ending is what Run reports when a serve ended.
type ending struct {
	// preempted: the serve is served again after what preempted it (by).
	preempted bool
	by        string
	// ready: READY=1 with the status (a SIGHUP that failed before its
	// reload), else STATUS= only; neither when preempted.
	ready bool
	// finish are the triggers whose waiters are told the pass ended.
	finish *trigger
}

// ended takes the end of the running serve. A preempted serve is served
// again after what preempted it, folded with it: its SIGHUP still owed when
// it did not reload yet, and its fast path when it did not run it to its
// end (a reload it made may have taken in a bcache-only change that the
// next load no longer sees as one).
func (s *scheduler) ended(o outcome) (ending, decision) {
	done := *s.running
	s.running = nil
	var e ending
	if o.preempted {
		s.preempted++
		e.preempted = true
		t := done
		t.hup = t.hup && !o.reloaded
		t.fast = t.fast || o.fastOwed
		if s.pending != nil {
			e.by = s.pending.why
			s.pending = fold(&t, *s.pending)
		} else {
			s.pending = &t
		}
	} else {
		s.preempted = 0
		e.ready = done.hup && !o.reloaded
		e.finish = &done
	}
	if s.pending == nil {
		return e, decision{}
	}
	return e, decision{drain: true, start: true}
}

// fold merges t into p (nil: t alone): reload, fast and hup if either
// asks, every waiter, p's reason.
func fold(p *trigger, t trigger) *trigger {
	if p == nil {
		return &t
	}
	m := *p
	m.reload = m.reload || t.reload
	m.fast = m.fast || t.fast
	m.hup = m.hup || t.hup
	m.done = append(append([]chan struct{}(nil), m.done...), t.done...)
	return &m
}
