package plan

import (
	"io"
	"testing"

	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/schema/spec"
)

// The planner's tests export these to report_golden_test.go (package
// plan_test), which renders the planner's results through reconcile/report:
// the report package imports the planner, so only an external test of the
// planner can use both.

// ScenarioRun is one planner scenario of TestPlanScenarios, run.
type ScenarioRun struct {
	Name    string
	Audit   bool
	Host    *model.Host
	Result  Result
	Desired string
}

// RunScenarios runs every scenario of TestPlanScenarios.
func RunScenarios(t *testing.T) []ScenarioRun {
	var out []ScenarioRun
	for _, s := range scenarios {
		h, r := s.run(t)
		out = append(out, ScenarioRun{Name: s.name, Audit: s.desired == "", Host: h, Result: r, Desired: s.desired})
	}
	return out
}

// Golden compares what write produces with testdata/golden/name.
func Golden(t *testing.T, name string, write func(w io.Writer) error) { golden(t, name, write) }

// ReplayHost, LoadDesired, ReplayScale, ReplayAgain and ScaleCases are the
// planner tests' fixtures.
func ReplayHost(t testing.TB, name string) *model.Host { return replayHost(t, name) }

// LoadDesired loads testdata/desired/name.cue for h.
func LoadDesired(t testing.TB, name string, h *model.Host) *spec.Config {
	return loadDesired(t, name, h)
}

// ReplayScale replays the named capture of probes/testdata/scale.
func ReplayScale(tb testing.TB, name string) (*hostio.Snapshot, *model.Host) {
	return replayScale(tb, name)
}

// ReplayAgain probes s once more.
func ReplayAgain(tb testing.TB, s *hostio.Snapshot) *model.Host { return replayAgain(tb, s) }

// ScaleCase names one captured scale host and its desired state.
type ScaleCase struct{ Name, Desired string }

// ScaleCases lists the scale benchmarks' hosts.
func ScaleCases() []ScaleCase {
	var out []ScaleCase
	for _, c := range scaleCases {
		out = append(out, ScaleCase{c.name, c.desired})
	}
	return out
}
