package daemon

import (
	"testing"
	"time"
)

// event is one input of a scheduler table test: a trigger (add), a
// trigger drained from the queue (queued), or the end of the running serve
// (end).
type event struct {
	add    *trigger
	from   origin
	queued *trigger
	end    *outcome
}

// step is what the scheduler decides after an event, and what it starts
// when Run carries a start out.
type step struct {
	dec         decision
	end         ending // compared when the event is an end (finish by why only)
	started     string // why of the trigger started ("" none)
	reload      bool   // the started trigger reloads
	fast        bool   // ... takes the fast path
	hup         bool   // ... is a SIGHUP owed READY=1
	preemptible bool   // ... may be preempted
	waiters     int    // ... has this many waiters
}

func TestScheduler(t *testing.T) {
	tr := func(why string, reload, fast, hup bool) *trigger {
		return &trigger{why: why, reload: reload, fast: fast, hup: hup}
	}
	waiting := func(why string) *trigger { return &trigger{why: why, done: []chan struct{}{make(chan struct{})}} }
	change := tr("desired state changed", true, false, false)
	bcache := tr("bcache registered", false, true, false)
	hup := tr("SIGHUP", true, false, true)
	resync := tr("resync", false, false, false)
	lvmconf := tr("lvm.conf changed", false, false, false)
	start := decision{start: true}
	settle := func(d time.Duration) decision { return decision{settle: d, drain: true, start: true} }
	next := decision{drain: true, start: true}
	preempted := &outcome{preempted: true}
	for _, c := range []struct {
		name   string
		events []event
		steps  []step
	}{
		{"a queued trigger settles for the debounce, then drains the queue",
			[]event{{add: change, from: fromQueue}},
			[]step{{dec: settle(20 * time.Millisecond), started: "desired state changed", reload: true, preemptible: true}}},
		{"a fast one settles for 50ms whatever the debounce",
			[]event{{add: bcache, from: fromQueue}},
			[]step{{dec: settle(fastDebounce), started: "bcache registered", fast: true, preemptible: true}}},
		{"a SIGHUP and the resync are served at once",
			[]event{{add: hup, from: fromSignal}, {end: &outcome{reloaded: true}}, {add: resync, from: fromResync}},
			[]step{{dec: start, started: "SIGHUP", reload: true, hup: true, preemptible: true},
				{end: ending{finish: hup}},
				{dec: start, started: "resync", preemptible: true}}},
		{"what was queued behind is folded in, with the first reason",
			[]event{{add: lvmconf, from: fromQueue}, {queued: change}, {queued: bcache}},
			[]step{{dec: settle(20 * time.Millisecond)}, {}, {started: "lvm.conf changed", reload: true, fast: true, preemptible: true}}},
		{"a trigger that asks for nothing prompt waits and preempts nothing",
			[]event{{add: lvmconf, from: fromQueue}, {add: resync, from: fromResync}, {add: waiting("block device change"), from: fromQueue}, {end: &outcome{}}},
			[]step{{dec: settle(20 * time.Millisecond), started: "lvm.conf changed", preemptible: true},
				{}, {},
				{dec: next, end: ending{finish: lvmconf}, started: "resync", preemptible: true, waiters: 1}}},
		{"a changed desired state or a bcache registration preempts; the preempted serve runs again with it",
			[]event{{add: lvmconf, from: fromQueue}, {add: change, from: fromQueue}, {add: bcache, from: fromQueue}, {end: preempted}},
			[]step{{dec: settle(20 * time.Millisecond), started: "lvm.conf changed", preemptible: true},
				{dec: decision{preempt: true}}, {dec: decision{preempt: true}},
				{dec: next, end: ending{preempted: true, by: "desired state changed"}, started: "lvm.conf changed", reload: true, fast: true, preemptible: true}}},
		{"a preempted SIGHUP that reloaded owes no second READY",
			[]event{{add: hup, from: fromSignal}, {add: change, from: fromQueue}, {end: &outcome{preempted: true, reloaded: true}}},
			[]step{{dec: start, started: "SIGHUP", reload: true, hup: true, preemptible: true},
				{dec: decision{preempt: true}},
				{dec: next, end: ending{preempted: true, by: "desired state changed"}, started: "SIGHUP", reload: true, preemptible: true}}},
		{"a preempted SIGHUP that did not reload yet still owes it",
			[]event{{add: hup, from: fromSignal}, {add: change, from: fromQueue}, {end: preempted}},
			[]step{{dec: start, started: "SIGHUP", reload: true, hup: true, preemptible: true},
				{dec: decision{preempt: true}},
				{dec: next, end: ending{preempted: true, by: "desired state changed"}, started: "SIGHUP", reload: true, hup: true, preemptible: true}}},
		{"a fast path owed by the preempted serve is handed on",
			[]event{{add: hup, from: fromSignal}, {add: change, from: fromQueue}, {end: &outcome{preempted: true, reloaded: true, fastOwed: true}}},
			[]step{{dec: start, started: "SIGHUP", reload: true, hup: true, preemptible: true},
				{dec: decision{preempt: true}},
				{dec: next, end: ending{preempted: true, by: "desired state changed"}, started: "SIGHUP", reload: true, fast: true, preemptible: true}}},
		{"a SIGHUP that ended before its reload sends READY with its status",
			[]event{{add: hup, from: fromSignal}, {end: &outcome{}}},
			[]step{{dec: start, started: "SIGHUP", reload: true, hup: true, preemptible: true},
				{end: ending{ready: true, finish: hup}}}},
		{"after maxPreemptions in a row a serve is not preemptible; a serve to its end resets the count",
			[]event{{add: lvmconf, from: fromQueue},
				{add: change, from: fromQueue}, {end: preempted},
				{add: change, from: fromQueue}, {end: preempted},
				{add: change, from: fromQueue}, {end: preempted},
				{add: change, from: fromQueue}, {end: &outcome{}},
				{end: &outcome{}}},
			[]step{{dec: settle(20 * time.Millisecond), started: "lvm.conf changed", preemptible: true},
				{dec: decision{preempt: true}}, {dec: next, end: ending{preempted: true, by: "desired state changed"}, started: "lvm.conf changed", reload: true, preemptible: true},
				{dec: decision{preempt: true}}, {dec: next, end: ending{preempted: true, by: "desired state changed"}, started: "lvm.conf changed", reload: true, preemptible: true},
				{dec: decision{preempt: true}}, {dec: next, end: ending{preempted: true, by: "desired state changed"}, started: "lvm.conf changed", reload: true, preemptible: false},
				{}, {dec: next, end: ending{finish: lvmconf}, started: "desired state changed", reload: true, preemptible: true},
				{end: ending{finish: change}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := scheduler{debounce: 20 * time.Millisecond}
			owed := false
			for i, e := range c.events {
				want := c.steps[i]
				var got step
				switch {
				case e.add != nil:
					got.dec = s.add(*e.add, e.from)
				case e.queued != nil:
					s.queued(*e.queued)
				case e.end != nil:
					got.end, got.dec = s.ended(*e.end)
				}
				if got.dec != want.dec {
					t.Errorf("event %d: decision %+v, want %+v", i, got.dec, want.dec)
				}
				if e.end != nil {
					g, w := got.end, want.end
					gf, wf := "", ""
					if g.finish != nil {
						gf = g.finish.why
					}
					if w.finish != nil {
						wf = w.finish.why
					}
					if g.preempted != w.preempted || g.by != w.by || g.ready != w.ready || gf != wf {
						t.Errorf("event %d: ending %+v (finish %q), want %+v (finish %q)", i, g, gf, w, wf)
					}
				}
				// Run starts what is pending once an event's decision
				// says so, after it drained the queue (the queued events
				// that follow).
				owed = owed || got.dec.start
				if !owed || (i+1 < len(c.events) && c.events[i+1].queued != nil) {
					if want.started != "" {
						t.Errorf("event %d: nothing started, want %q", i, want.started)
					}
					continue
				}
				owed = false
				st, preemptible, ok := s.next()
				if !ok {
					if want.started != "" {
						t.Errorf("event %d: nothing started, want %q", i, want.started)
					}
					continue
				}
				if st.why != want.started || st.reload != want.reload || st.fast != want.fast || st.hup != want.hup ||
					preemptible != want.preemptible || len(st.done) != want.waiters {
					t.Errorf("event %d: started %q reload %v fast %v hup %v preemptible %v waiters %d, want %+v",
						i, st.why, st.reload, st.fast, st.hup, preemptible, len(st.done), want)
				}
			}
		})
	}
}

// While a serve runs, nothing else starts: next starts only when idle.
func TestSchedulerOneAtATime(t *testing.T) {
	s := scheduler{debounce: 20 * time.Millisecond}
	s.add(trigger{why: "resync"}, fromResync)
	if _, _, ok := s.next(); !ok || s.idle() {
		t.Fatal("the resync did not start")
	}
	s.add(trigger{why: "lvm.conf changed"}, fromQueue)
	if _, _, ok := s.next(); ok {
		t.Fatal("a second serve started while one runs")
	}
	if _, dec := s.ended(outcome{}); !dec.start {
		t.Fatal("the waiting trigger is not started after the end")
	}
	if t2, _, ok := s.next(); !ok || t2.why != "lvm.conf changed" {
		t.Fatalf("started %q, %v", t2.why, ok)
	}
}
