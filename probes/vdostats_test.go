package probes

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// gatedRunner holds lvm fullreport back until a VDO statistics message has
// been sent, and counts the messages.
type gatedRunner struct {
	Runner
	sent     chan struct{}
	once     sync.Once
	mu       sync.Mutex
	messages map[string]int
	fail     error
}

func (g *gatedRunner) Run(ctx context.Context, c Cmd) (Result, error) {
	switch {
	case c.Name == "lvm" && len(c.Args) > 0 && c.Args[0] == "fullreport":
		select {
		case <-g.sent:
		case <-time.After(10 * time.Second):
			return Result{}, errors.New("lvm fullreport: no VDO statistics message was sent while it ran")
		}
	case c.Name == "dmsetup" && len(c.Args) == 4 && c.Args[0] == "message":
		g.mu.Lock()
		g.messages[c.Args[1]]++
		g.mu.Unlock()
		defer g.once.Do(func() { close(g.sent) })
		if g.fail != nil {
			return Result{}, g.fail
		}
	}
	return g.Runner.Run(ctx, c)
}

func gated(t *testing.T, name string) (*gatedRunner, Source) {
	src := Replay(loadSnapshot(t, name))
	g := &gatedRunner{Runner: src.Runner, sent: make(chan struct{}), messages: map[string]int{}}
	src.Runner = g
	return g, src
}

// The statistics of a VDO pool are read while lvm fullreport runs (the
// runner holds the report back until they are), once per pool, and give the
// same host as a pass that reads them after the report.
func TestVDOStatsReadDuringFullReport(t *testing.T) {
	for _, name := range []string{"vdo-defaults", "vdo-on-bcache"} {
		g, src := gated(t, name)
		h, err := Probe(context.Background(), src)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(h.VDOPools) == 0 {
			t.Fatalf("%s: no VDO pool", name)
		}
		for lv, p := range h.VDOPools {
			if p.DMName == "" || p.Stats == nil {
				t.Errorf("%s: pool %s: dm name %q, stats %v", name, lv, p.DMName, p.Stats)
			}
			if n := g.messages[p.DMName]; n != 1 {
				t.Errorf("%s: pool %s: %d statistics messages, want 1", name, lv, n)
			}
		}
		want := probeSnapshot(t, name)
		for lv, p := range want.VDOPools {
			if got := h.VDOPools[lv]; got == nil || got.Stats == nil || !reflect.DeepEqual(got.Stats, p.Stats) {
				t.Errorf("%s: pool %s: prefetched stats differ from the replayed pass's", name, lv)
			}
		}
	}
}

// A failed prefetch is the pool's error, as a failed read after the report
// was: the pass goes on and the message is not sent a second time.
func TestVDOStatsPrefetchErrorIsThePoolsError(t *testing.T) {
	g, src := gated(t, "vdo-defaults")
	g.fail = errors.New("dmsetup message: device busy")
	h, err := Probe(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	for lv, p := range h.VDOPools {
		if p.Stats != nil || !strings.Contains(strings.Join(p.Errors, "\n"), "device busy") {
			t.Errorf("pool %s: stats %v, errors %q", lv, p.Stats, p.Errors)
		}
		if n := g.messages[p.DMName]; n != 1 {
			t.Errorf("pool %s: %d statistics messages, want 1", lv, n)
		}
	}
}
