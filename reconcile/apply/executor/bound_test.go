package executor

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/reconcile/plan"
)

// timeoutRunner records the Timeout of every command it is handed.
type timeoutRunner struct{ got map[string]time.Duration }

func (r *timeoutRunner) Run(_ context.Context, c hostio.Cmd) (hostio.Result, error) {
	r.got[c.Name] = c.Timeout
	return hostio.Result{}, nil
}

// TestLongCommandsUnbounded: the executor hands the runner each command
// with hostio.Bound's policy, so a pvmove runs to its end whatever the
// runner's own timeout, and hands the Starting hook each command first.
func TestLongCommandsUnbounded(t *testing.T) {
	r := &timeoutRunner{got: map[string]time.Duration{}}
	e := New(r, Options{})
	e.Clock = newClock()
	var started []string
	e.Starting = func(a plan.Action, argv []string) error {
		started = append(started, a.ID+" "+strings.Join(argv, " "))
		return nil
	}
	a := plan.Action{ID: "vdo.layout.journal_off_fast:kvg/vsplit", Kind: plan.KindCommand, Class: plan.Live, Object: "kvg/vsplit",
		Commands: [][]string{{"pvmove", "-n", "kvg/vsplit_vdata", "/dev/sdb:10-42", "/dev/nvme0n1"}, {"lvcreate", "-L", "1G", "-n", "x", "kvg"}}}
	if _, err := e.Apply(context.Background(), []plan.Action{a}, nil, Mode{Partial: true, Once: true}, nil); err != nil {
		t.Fatal(err)
	}
	if r.got["pvmove"] != hostio.Unbounded || r.got["lvcreate"] != 0 {
		t.Errorf("timeouts handed to the runner: %v; want pvmove unbounded, lvcreate the runner's own", r.got)
	}
	if len(started) != 2 || !strings.HasPrefix(started[0], a.ID+" pvmove -n") {
		t.Errorf("Starting saw %q", started)
	}
	// A command Starting refuses is not run.
	r.got = map[string]time.Duration{}
	e.Starting = func(plan.Action, []string) error { return errors.New("state not writable") }
	rep, _ := e.Apply(context.Background(), []plan.Action{a}, nil, Mode{Partial: true, Once: true}, nil)
	if len(r.got) != 0 || len(rep.Results) != 1 || rep.Results[0].Status == Converged {
		t.Errorf("with Starting failing: ran %v, results %+v", r.got, rep.Results)
	}
}
