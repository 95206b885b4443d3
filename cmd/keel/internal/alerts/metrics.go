package alerts

import (
	"sync"
	"time"

	"github.com/keel-storage/keel/reconcile/plan"
	"github.com/keel-storage/keel/reconcile/report"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the daemon's Prometheus metrics, kept in their own registry
// and written to a node_exporter textfile after each pass.
type Metrics struct {
	reg                *prometheus.Registry
	reloadOK           prometheus.Gauge
	reloadTime         prometheus.Gauge
	reconcileTime      prometheus.Gauge
	reconcileErrors    prometheus.Counter
	passes             prometheus.Counter
	actions            *prometheus.CounterVec
	findings           *prometheus.GaugeVec
	findingsBySeverity *prometheus.GaugeVec
	stuck              prometheus.Gauge
	holds              prometheus.Gauge
	panics             prometheus.Counter
	audit              prometheus.Gauge
	// levels holds the used and threshold gauges of each
	// reconcile.LevelMetrics kind.
	levels map[string]levelGauges

	mu    sync.Mutex
	wipes map[[2]string]func() (done, total uint64, rate float64)
}

// NewMetrics registers every metric.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		reloadOK: prometheus.NewGauge(prometheus.GaugeOpts{Name: "keel_config_last_reload_successful",
			Help: "1 if the last load of the desired state validated, else 0 (the previous one stays in force)."}),
		reloadTime: prometheus.NewGauge(prometheus.GaugeOpts{Name: "keel_config_last_reload_success_timestamp_seconds",
			Help: "Time of the last successful load of the desired state."}),
		reconcileTime: prometheus.NewGauge(prometheus.GaugeOpts{Name: "keel_reconcile_last_success_timestamp_seconds",
			Help: "Time of the last reconcile pass that probed, planned and applied without an error."}),
		reconcileErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "keel_reconcile_errors_total",
			Help: "Reconcile passes that could not probe, plan or apply."}),
		passes: prometheus.NewCounter(prometheus.CounterOpts{Name: "keel_reconcile_passes_total",
			Help: "Reconcile passes run."}),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "keel_reconcile_actions_total",
			Help: "Actions by outcome (converged, stuck, failed, refused, skipped)."}, []string{"status"}),
		findings: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: report.FindingMetric,
			Help: report.FindingMetricHelp}, []string{"id", "severity", "object", "vg", "lv", "undeclared"}),
		findingsBySeverity: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: report.FindingsMetric,
			Help: report.FindingsMetricHelp}, []string{"severity"}),
		stuck: prometheus.NewGauge(prometheus.GaugeOpts{Name: "keel_actions_stuck",
			Help: "Actions marked stuck (reconcile.stuck findings)."}),
		holds: prometheus.NewGauge(prometheus.GaugeOpts{Name: "keel_holds",
			Help: "Operators' holds in force (keel hold; each is also a hold.active finding naming its object)."}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{Name: "keel_panics_total",
			Help: "Passes that panicked and were recovered (the daemon logged the stack and went on)."}),
		audit: prometheus.NewGauge(prometheus.GaugeOpts{Name: "keel_audit_mode",
			Help: "1 while keel run is in audit mode (observes and reports, changes nothing), 0 while it converges."}),
		levels: map[string]levelGauges{},
	}
	m.reg.MustRegister(m.reloadOK, m.reloadTime, m.reconcileTime, m.reconcileErrors, m.passes,
		m.actions, m.findings, m.findingsBySeverity, m.stuck, m.holds, m.panics, m.audit, wipeCollector{m})
	for _, g := range report.LevelMetrics {
		used := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: g.Name, Help: g.Help}, report.LevelLabelNames(g))
		m.reg.MustRegister(used)
		var alert *prometheus.GaugeVec
		if g.Threshold != "" {
			alert = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: g.Threshold, Help: g.ThresholdHelp}, report.LevelLabelNames(g))
			m.reg.MustRegister(alert)
		}
		m.levels[g.Kind] = levelGauges{g, used, alert}
	}
	for _, s := range []string{"info", "warning", "error", "critical"} {
		m.findingsBySeverity.WithLabelValues(s)
	}
	return m
}

// Registry returns the registry, e.g. for an HTTP handler.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Reload records a load of the desired state.
func (m *Metrics) Reload(ok bool, at time.Time) {
	if ok {
		m.reloadOK.Set(1)
		m.reloadTime.Set(float64(at.Unix()))
		return
	}
	m.reloadOK.Set(0)
}

// Panicked counts a pass that panicked and was recovered.
func (m *Metrics) Panicked() { m.panics.Inc() }

// Audit records whether the daemon runs in audit mode.
func (m *Metrics) Audit(on bool) {
	v := 0.0
	if on {
		v = 1
	}
	m.audit.Set(v)
}

// Pass records a reconcile pass: err is nil when it probed, planned and
// applied; statuses counts the executor's results by status; findings are
// every active finding after the pass, levels the fill levels of its
// pools (a pool no longer reported disappears from the file).
func (m *Metrics) Pass(at time.Time, err error, statuses map[string]int, findings []plan.Finding, levels []plan.Level) {
	m.passes.Inc()
	if err != nil {
		m.reconcileErrors.Inc()
	} else {
		m.reconcileTime.Set(float64(at.Unix()))
	}
	for s, n := range statuses {
		m.actions.WithLabelValues(s).Add(float64(n))
	}
	m.findings.Reset()
	counts := map[string]int{"info": 0, "warning": 0, "error": 0, "critical": 0}
	stuck, holds := 0, 0
	for _, f := range findings {
		vg, lv := report.ObjectLabels(f.Object)
		m.findings.WithLabelValues(string(f.ID), f.Severity.String(), f.Object, vg, lv, report.UndeclaredLabel(f)).Set(1)
		counts[f.Severity.String()]++
		switch f.ID {
		case plan.ReconcileStuck:
			stuck++
		case plan.HoldActive:
			holds++
		}
	}
	for s, n := range counts {
		m.findingsBySeverity.WithLabelValues(s).Set(float64(n))
	}
	m.stuck.Set(float64(stuck))
	m.holds.Set(float64(holds))
	for _, g := range m.levels {
		g.used.Reset()
		if g.alert != nil {
			g.alert.Reset()
		}
	}
	for _, l := range levels {
		g, ok := m.levels[l.Kind]
		if !ok {
			continue
		}
		values := report.LevelLabelValues(g.metric, l)
		g.used.WithLabelValues(values...).Set(l.Ratio())
		if g.alert != nil && report.HasThreshold(l) {
			g.alert.WithLabelValues(values...).Set(l.AlertRatio())
		}
	}
}

// levelGauges are the gauges of one reconcile.LevelMetrics kind: its use,
// and its threshold (nil for a kind without one).
type levelGauges struct {
	metric      report.LevelMetric
	used, alert *prometheus.GaugeVec
}

// WriteTextfile writes every metric to path atomically (a temporary file
// renamed into place; node_exporter reads only *.prom names).
func (m *Metrics) WriteTextfile(path string) error {
	return prometheus.WriteToTextfile(path, m.reg)
}

var (
	wipeDoneDesc = prometheus.NewDesc("keel_wipe_done_bytes",
		"Bytes zeroed or discarded so far by a safe removal in progress.", []string{"vg", "lv"}, nil)
	wipeTotalDesc = prometheus.NewDesc("keel_wipe_size_bytes",
		"Bytes a safe removal in progress has to zero or discard.", []string{"vg", "lv"}, nil)
	wipeRateDesc = prometheus.NewDesc("keel_wipe_bytes_per_second",
		"Rate of a safe removal in progress so far.", []string{"vg", "lv"}, nil)
)

// WipeStarted publishes a safe removal of vg/lv in progress: stat is read at
// every gather until WipeFinished. The series exist only while it runs.
func (m *Metrics) WipeStarted(vg, lv string, stat func() (done, total uint64, rate float64)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.wipes == nil {
		m.wipes = map[[2]string]func() (uint64, uint64, float64){}
	}
	m.wipes[[2]string{vg, lv}] = stat
}

// WipeFinished removes the progress series of vg/lv.
func (m *Metrics) WipeFinished(vg, lv string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.wipes, [2]string{vg, lv})
}

// WipesInFlight returns the number of safe removals in progress.
func (m *Metrics) WipesInFlight() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.wipes)
}

// WipeDone returns the bytes done by every safe removal in progress, added
// up: the daemon's watchdog pings go on while it grows.
func (m *Metrics) WipeDone() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var sum uint64
	for _, stat := range m.wipes {
		done, _, _ := stat()
		sum += done
	}
	return sum
}

// wipeCollector reads the progress of every wipe in flight at gather time.
type wipeCollector struct{ m *Metrics }

func (c wipeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- wipeDoneDesc
	ch <- wipeTotalDesc
	ch <- wipeRateDesc
}

func (c wipeCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	for k, stat := range c.m.wipes {
		done, total, rate := stat()
		ch <- prometheus.MustNewConstMetric(wipeDoneDesc, prometheus.GaugeValue, float64(done), k[0], k[1])
		ch <- prometheus.MustNewConstMetric(wipeTotalDesc, prometheus.GaugeValue, float64(total), k[0], k[1])
		ch <- prometheus.MustNewConstMetric(wipeRateDesc, prometheus.GaugeValue, rate, k[0], k[1])
	}
}
