package report

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/keel-storage/keel/reconcile/plan"

	"github.com/keel-storage/keel/lvm"
)

// Report is the outcome of one keel check: which host, what differs, a
// summary, and the fill levels the Prometheus form exports. Its JSON form is
// defined by #Report in schema/report.cue.
type Report struct {
	Host     HostInfo       `json:"host"`
	Findings []plan.Finding `json:"findings"`
	Summary  Summary        `json:"summary"`
	Levels   []plan.Level   `json:"levels"`
	// NotEvaluated lists catalogue IDs this check did not judge
	// (Result.NotEvaluated): absent from Findings does not mean passed for these.
	NotEvaluated []plan.FindingID `json:"notEvaluated,omitempty"`
	// Error says why keel could not check the host (FailedReport); the
	// report then has no findings and Summary.OK is false.
	Error string `json:"error,omitempty"`
}

// HostInfo names the checked host and how it was judged.
type HostInfo struct {
	// Name is the host name the probe (or the replayed snapshot) reported;
	// keel check names a snapshot that recorded none by its file name.
	Name string `json:"name"`
	// Mode is "desired" (against the desired state) or "audit" (against the
	// reference rules, without a desired state).
	Mode string `json:"mode"`
	// CPUs and MemoryBytes are the figures the planner used.
	CPUs        int    `json:"cpus"`
	MemoryBytes uint64 `json:"memoryBytes"`
}

// Summary counts findings by severity.
type Summary struct {
	Total    int `json:"total"`
	Critical int `json:"critical"`
	Error    int `json:"error"`
	Warning  int `json:"warning"`
	Info     int `json:"info"`
	// OK is true when no finding is at warning or above (keel check exits 0).
	OK bool `json:"ok"`
}

// NewReport sorts findings and levels into output order and summarises them.
// notEvaluated lists the catalogue IDs the pass did not judge
// (Result.NotEvaluated).
func NewReport(host HostInfo, findings []plan.Finding, levels []plan.Level, notEvaluated []plan.FindingID) Report {
	fs := append([]plan.Finding(nil), findings...)
	plan.SortFindings(fs)
	ls := append([]plan.Level(nil), levels...)
	sort.SliceStable(ls, func(i, j int) bool {
		if ls[i].Kind != ls[j].Kind {
			return ls[i].Kind < ls[j].Kind
		}
		return ls[i].Object < ls[j].Object
	})
	s := Summary{Total: len(fs)}
	for _, f := range fs {
		switch f.Severity {
		case plan.Critical:
			s.Critical++
		case plan.Error:
			s.Error++
		case plan.Warning:
			s.Warning++
		default:
			s.Info++
		}
	}
	s.OK = s.Critical+s.Error+s.Warning == 0
	if fs == nil {
		fs = []plan.Finding{}
	}
	if ls == nil {
		ls = []plan.Level{}
	}
	return Report{Host: host, Findings: fs, Summary: s, Levels: ls, NotEvaluated: slices.Clone(notEvaluated)}
}

// WriteJSON writes the report as indented JSON.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	// A remedy is a shell command: && stays &&, not \u0026.
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}

// WriteText writes the report for a person: one block per finding, most
// serious first, then a summary line.
func (r Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "host %s (%s, %s)\n", r.Host.Name, modeText(r.Host.Mode), plural(r.Host.CPUs, "CPU"))
	for _, f := range r.Findings {
		fmt.Fprintf(&b, "\n%-8s %s  %s%s\n", strings.ToUpper(f.Severity.String()), f.ID, f.Object, undeclaredMark(f))
		fmt.Fprintf(&b, "         %s\n", f.Message)
		for _, kv := range [][2]string{{"expected", f.Expected}, {"observed", f.Observed}, {"remedy", f.Remedy}, {"waived", f.Waived.String()}} {
			if kv[1] != "" {
				fmt.Fprintf(&b, "         %-9s %s\n", kv[0]+":", kv[1])
			}
		}
	}
	if len(r.Findings) > 0 {
		b.WriteString("\n")
	}
	s := r.Summary
	fmt.Fprintf(&b, "%s: %d critical, %d error, %d warning, %d info\n",
		plural(s.Total, "finding"), s.Critical, s.Error, s.Warning, s.Info)
	_, err := io.WriteString(w, b.String())
	return err
}

// undeclaredMark is what the text and JUnit forms write after the object
// of a finding on a pool the desired state does not declare.
func undeclaredMark(f plan.Finding) string {
	if f.Undeclared {
		return " (undeclared)"
	}
	return ""
}

// UndeclaredLabel is the value of the undeclared label of FindingMetric:
// "true" for a finding on a pool the desired state does not declare
// (plan.Finding.Undeclared), else "false".
func UndeclaredLabel(f plan.Finding) string { return strconv.FormatBool(f.Undeclared) }

func modeText(mode string) string {
	if mode == "audit" {
		return "audit against the reference rules"
	}
	return "against the desired state"
}

// JUnit XML shapes (the subset CI systems read).
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Skipped  int          `xml:"skipped,attr,omitempty"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr,omitempty"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes one test case per catalogue rule, so that test names are
// stable between runs: a rule fails when it has a finding at warning or
// above; info findings are passing cases with the finding in system-out.
func (r Report) WriteJUnit(w io.Writer) error {
	byID := map[plan.FindingID][]plan.Finding{}
	for _, f := range r.Findings {
		byID[f.ID] = append(byID[f.ID], f)
	}
	suite := junitSuite{Name: "keel check " + r.Host.Name}
	for _, rule := range plan.Catalogue {
		if rule.Runtime() {
			continue // keel check never raises it
		}
		c := junitCase{Name: string(rule.ID), Classname: "keel." + strings.SplitN(string(rule.ID), ".", 2)[0]}
		var fail, out strings.Builder
		failing := false
		for _, f := range byID[rule.ID] {
			dst := &out
			if f.Severity >= plan.Warning {
				dst, failing = &fail, true
			}
			fmt.Fprintf(dst, "%s %s%s: %s", f.Severity, f.Object, undeclaredMark(f), f.Message)
			if f.Remedy != "" {
				fmt.Fprintf(dst, " (remedy: %s)", f.Remedy)
			}
			dst.WriteString("\n")
		}
		if failing {
			c.Failure = &junitFailure{Message: rule.Title, Type: rule.Severity.String(), Text: fail.String()}
			suite.Failures++
		} else if slices.Contains(r.NotEvaluated, rule.ID) {
			c.Skipped = &junitSkipped{Message: "not evaluated by this check"}
			suite.Skipped++
		}
		c.SystemOut = out.String()
		suite.Cases = append(suite.Cases, c)
	}
	suite.Tests = len(suite.Cases)
	doc := junitSuites{Name: "keel", Tests: suite.Tests, Failures: suite.Failures, Skipped: suite.Skipped, Suites: []junitSuite{suite}}
	return writeXML(w, doc)
}

// WritePrometheus writes the report in the Prometheus text format for
// node_exporter's textfile collector: keel_check_success 1, one
// keel_finding_active series per finding, per-severity counts, and the fill
// levels as ratios (0 to 1) with their alert thresholds. The names and
// labels are the daemon's (docs/metrics.md), so one rule file serves both.
func (r Report) WritePrometheus(w io.Writer) error {
	var b strings.Builder
	writeSuccess(&b, true)
	metricHead(&b, FindingMetric, FindingMetricHelp)
	for _, f := range r.Findings {
		vg, lv := ObjectLabels(f.Object)
		fmt.Fprintf(&b, "%s{id=%s,severity=%s,object=%s,vg=%s,lv=%s,undeclared=%s} 1\n", FindingMetric,
			promQuote(string(f.ID)), promQuote(f.Severity.String()), promQuote(f.Object), promQuote(vg), promQuote(lv),
			promQuote(UndeclaredLabel(f)))
	}
	metricHead(&b, FindingsMetric, FindingsMetricHelp)
	counts := []int{r.Summary.Info, r.Summary.Warning, r.Summary.Error, r.Summary.Critical}
	for s := plan.Critical; s >= plan.Info; s-- {
		fmt.Fprintf(&b, "%s{severity=%s} %d\n", FindingsMetric, promQuote(s.String()), counts[s])
	}
	for _, g := range LevelMetrics {
		for _, m := range []struct {
			name, help string
			value      func(plan.Level) float64
		}{{g.Name, g.Help, plan.Level.Ratio},
			{g.Threshold, g.ThresholdHelp, plan.Level.AlertRatio}} {
			if m.name == "" {
				continue // a level without a threshold (LevelMetric.Threshold)
			}
			metricHead(&b, m.name, m.help)
			for _, l := range r.Levels {
				if l.Kind == g.Kind && (m.name == g.Name || HasThreshold(l)) {
					fmt.Fprintf(&b, "%s{%s} %s\n", m.name, levelLabels(g, l), promFloat(m.value(l)))
				}
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WritePrometheusFailure writes the textfile form of a check that could not
// run: keel_check_success 0 and nothing else, so stale findings disappear
// and an alert on keel_check_success fires.
func WritePrometheusFailure(w io.Writer) error {
	var b strings.Builder
	writeSuccess(&b, false)
	_, err := io.WriteString(w, b.String())
	return err
}

// FindingMetric is the gauge that is 1 for each active finding, with the
// labels id, severity, object, vg, lv and undeclared (UndeclaredLabel);
// FindingsMetric counts the active findings per severity. keel check and
// keel run write both.
const (
	FindingMetric      = "keel_finding_active"
	FindingMetricHelp  = "1 for each active finding (absent once it clears), by ID, severity and object; vg and lv name the object when it is an LVM one; undeclared is true on a pool the desired state does not declare."
	FindingsMetric     = "keel_findings"
	FindingsMetricHelp = "Number of active findings by severity."
)

// LevelMetric names the gauges of one kind of fill level (Level.Kind): the
// use as a ratio from 0 to 1, and the alert threshold of the desired state
// (the schema default in audit mode) as a ratio too, both labelled vg, lv.
// A kind without a threshold has Threshold "". ByObject labels its series
// with the object too, for objects that are not LVM ones (an md array,
// "/dev/md0": vg and lv empty).
type LevelMetric struct {
	Kind, Name, Help, Threshold, ThresholdHelp string
	ByObject                                   bool
}

// LevelLabelNames are the label names of g's series, in the order
// LevelLabelValues gives them.
func LevelLabelNames(g LevelMetric) []string {
	if g.ByObject {
		return []string{"object", "vg", "lv"}
	}
	return []string{"vg", "lv"}
}

// LevelLabelValues are the label values of l's series of kind g.
func LevelLabelValues(g LevelMetric, l plan.Level) []string {
	vg, lv := ObjectLabels(l.Object)
	if g.ByObject {
		return []string{l.Object, vg, lv}
	}
	return []string{vg, lv}
}

// levelLabels is the label set of l's series in the text format.
func levelLabels(g LevelMetric, l plan.Level) string {
	names, values := LevelLabelNames(g), LevelLabelValues(g, l)
	parts := make([]string, len(names))
	for i := range names {
		parts[i] = names[i] + "=" + promQuote(values[i])
	}
	return strings.Join(parts, ",")
}

// LevelMetrics are the fill-level gauges of keel check and keel run.
var LevelMetrics = []LevelMetric{
	{"thin_data", "keel_thin_data_used_ratio", "Thin pool data use, 0 to 1 (lvs data_percent / 100).",
		"keel_thin_data_alert_threshold_ratio", "Thin pool data use at which keel raises thin.data_usage (dataPercentAlert / 100).", false},
	{"thin_metadata", "keel_thin_metadata_used_ratio", "Thin pool metadata use, 0 to 1 (lvs metadata_percent / 100).",
		"keel_thin_metadata_alert_threshold_ratio", "Thin pool metadata use at which keel raises thin.metadata_usage (metadataPercentAlert / 100).", false},
	{"vdo_used", "keel_vdo_used_ratio", "VDO pool physical use, 0 to 1 (vdostats Use% / 100).",
		"keel_vdo_alert_threshold_ratio", "VDO pool physical use at which keel raises vdo.usage (usedPercentAlert / 100).", false},
	{"thin_overprovision", "keel_thin_overprovision_ratio", "Thin LVs' virtual sizes added up, over the thin pool's data size (above 1: overprovisioned).",
		"keel_thin_overprovision_max_ratio", "The thin pool's declared maxOverprovision, where keel raises thin.overprovisioned (absent when not declared).", false},
	// A RAID's sync (raid.resyncing): an LVM RAID LV's sync_percent / 100,
	// an md array's sync_completed; 1 when whole and idle.
	{"raid_sync", "keel_raid_sync_ratio", "Part of a RAID in sync, 0 to 1: an LVM RAID LV's sync_percent / 100 (vg, lv), an md array under a PV's sync_completed (object /dev/mdN); 1 when no sync runs.",
		"", "", true},
}

// HasThreshold reports whether level l has a threshold series: every fill
// level has one, an overprovisioning level only with a declared maximum.
func HasThreshold(l plan.Level) bool { return l.Alert > 0 }

// ObjectLabels splits a finding's or level's object into the vg and lv
// labels of the metrics: "vg/lv" gives both, a bare VG name gives vg, and
// objects that are not LVM ones ("bcache:…", "udev:…", "pve:…", lvm.conf)
// give neither.
func ObjectLabels(object string) (vg, lv string) {
	if object == "" || object == plan.LVMConfObject || strings.ContainsAny(object, ": ") || strings.HasPrefix(object, "/") {
		return "", ""
	}
	n := lvm.Split(object)
	return n.VG, n.LV
}

func writeSuccess(b *strings.Builder, ok bool) {
	metricHead(b, "keel_check_success", "1 when keel could probe the host and judge it, 0 when it could not.")
	v := 0
	if ok {
		v = 1
	}
	fmt.Fprintf(b, "keel_check_success %d\n", v)
}

func metricHead(b *strings.Builder, name, help string) {
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name)
}

// promQuote quotes a label value as the text format wants: backslash,
// double quote and newline escaped.
func promQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

func promFloat(v float64) string {
	return strconv.FormatFloat(v, 'g', -1, 64)
}
