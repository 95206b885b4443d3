package alerts

import (
	"time"

	"github.com/keel-storage/keel/reconcile"
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
		findings: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "keel_finding",
			Help: "1 for each active finding, by ID, object and severity."}, []string{"id", "object", "severity"}),
		findingsBySeverity: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "keel_findings",
			Help: "Number of active findings by severity."}, []string{"severity"}),
		stuck: prometheus.NewGauge(prometheus.GaugeOpts{Name: "keel_actions_stuck",
			Help: "Actions marked stuck (reconcile.stuck findings)."}),
	}
	m.reg.MustRegister(m.reloadOK, m.reloadTime, m.reconcileTime, m.reconcileErrors, m.passes,
		m.actions, m.findings, m.findingsBySeverity, m.stuck)
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

// Pass records a reconcile pass: err is nil when it probed, planned and
// applied; statuses counts the executor's results by status; findings are
// every active finding after the pass.
func (m *Metrics) Pass(at time.Time, err error, statuses map[string]int, findings []reconcile.Finding) {
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
	stuck := 0
	for _, f := range findings {
		m.findings.WithLabelValues(f.ID, f.Object, f.Severity.String()).Set(1)
		counts[f.Severity.String()]++
		if f.ID == "reconcile.stuck" {
			stuck++
		}
	}
	for s, n := range counts {
		m.findingsBySeverity.WithLabelValues(s).Set(float64(n))
	}
	m.stuck.Set(float64(stuck))
}

// WriteTextfile writes every metric to path atomically (a temporary file
// renamed into place; node_exporter reads only *.prom names).
func (m *Metrics) WriteTextfile(path string) error {
	return prometheus.WriteToTextfile(path, m.reg)
}
