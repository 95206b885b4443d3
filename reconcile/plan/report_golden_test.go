package plan_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/reconcile/plan"
	"github.com/keel-storage/keel/reconcile/report"
	"github.com/keel-storage/keel/reconcile/report/reporttest"
	"github.com/keel-storage/keel/schema/spec"
)

// Every planner scenario rendered in each report format matches its golden
// file, and its JSON validates against #Report.
func TestPlanScenarioReports(t *testing.T) {
	for _, s := range plan.RunScenarios(t) {
		t.Run(s.Name, func(t *testing.T) {
			h, r := s.Host, s.Result
			rep := report.NewReport(report.HostInfo{Name: h.Hostname, Mode: map[bool]string{true: "audit", false: "desired"}[s.Audit],
				CPUs: h.CPUs, MemoryBytes: h.Memory.TotalBytes}, r.Findings, r.Levels, r.NotEvaluated)
			plan.Golden(t, s.Name+".txt", rep.WriteText)
			plan.Golden(t, s.Name+".json", rep.WriteJSON)
			plan.Golden(t, s.Name+".junit.xml", rep.WriteJUnit)
			plan.Golden(t, s.Name+".prom", rep.WritePrometheus)
			if !s.Audit {
				plan.Golden(t, s.Name+".plan.txt", report.NewPlanReport(rep.Host, r).WriteText)
			}
			var js bytes.Buffer
			if err := rep.WriteJSON(&js); err != nil {
				t.Fatal(err)
			}
			reporttest.ValidateJSON(t, js.Bytes())
		})
	}
}

// The plan is deterministic: the same input gives byte-identical output.
func TestPlanDeterministic(t *testing.T) {
	h := plan.ReplayHost(t, "vdo-split-grown")
	d := plan.LoadDesired(t, "vdo-split", h)
	var first []byte
	for i := 0; i < 5; i++ {
		var b bytes.Buffer
		if err := report.NewPlanReport(report.HostInfo{}, plan.Plan(d, h)).WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = b.Bytes()
		} else if !bytes.Equal(first, b.Bytes()) {
			t.Fatal("plan output differs between runs")
		}
	}
}

// BenchmarkPlanScale is the plan alone of the captured hosts, the part of a
// check after its probe pass: at 2,000 VM disks under a declared
// global_filter most of it is the filter run over every disk's aliases
// (checkDeclaredFilter).
func BenchmarkPlanScale(b *testing.B) {
	benchScale(b, func(_ *testing.B, _ *hostio.Snapshot, h *model.Host, cfg *spec.Config, mem plan.Memory) {
		plan.PlanWith(cfg, h, mem)
	})
}

// BenchmarkCheckScale is what a `keel check -c` process does on the
// captured hosts after its start and beside its load of the desired state
// (which comes from the desired-state cache and overlaps the probe): the
// probe pass replayed, the plan against the desired state, and the text
// report.
func BenchmarkCheckScale(b *testing.B) {
	benchScale(b, func(b *testing.B, s *hostio.Snapshot, _ *model.Host, cfg *spec.Config, mem plan.Memory) {
		obs := plan.ReplayAgain(b, s)
		r := plan.PlanWith(cfg, obs, mem)
		rep := report.NewReport(report.HostInfo{Name: "scale", Mode: "desired", CPUs: obs.CPUs, MemoryBytes: obs.Memory.TotalBytes},
			r.Findings, r.Levels, r.NotEvaluated)
		if err := rep.WriteText(io.Discard); err != nil {
			b.Fatal(err)
		}
	})
}

// benchScale runs op once per iteration on each captured scale host, with
// the host as replayed once, its desired state and an empty memory.
func benchScale(b *testing.B, op func(b *testing.B, s *hostio.Snapshot, h *model.Host, cfg *spec.Config, mem plan.Memory)) {
	for _, c := range plan.ScaleCases() {
		b.Run(c.Name, func(b *testing.B) {
			s, h := plan.ReplayScale(b, c.Name)
			cfg := plan.LoadDesired(b, c.Desired, h)
			mem := plan.Memory{Today: "2026-12-01"}
			b.ReportAllocs()
			for b.Loop() {
				op(b, s, h, cfg, mem)
			}
			b.ReportMetric(float64(len(h.LVs)), "lvs")
		})
	}
}
