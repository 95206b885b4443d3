package alerts

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/keel-storage/keel/internal/testenv"
	"github.com/keel-storage/keel/reconcile/plan"
	"github.com/keel-storage/keel/reconcile/report"
	dto "github.com/prometheus/client_model/go"
)

const rulesDir = "../../../../packaging/integrations/prometheus"

// promtool finds Prometheus's promtool (Debian: apt-get install
// prometheus; .ci/install-deps installs it). Without it the test is skipped
// by a plain go test and fails under make check (testenv.NeedTool), so the
// checks cannot silently stop running there.
func promtool(t *testing.T) string {
	t.Helper()
	return testenv.NeedTool(t, "promtool", "apt-get install --no-install-recommends prometheus")
}

// sampleMetrics is a daemon's metrics after passes with every kind of
// series: findings on LVM and other objects, fill levels, a wipe in flight.
func sampleMetrics() *Metrics {
	m := NewMetrics()
	at := time.Unix(1764374400, 0)
	m.Reload(true, at)
	m.Audit(true)
	m.Pass(at, nil, map[string]int{"converged": 2, "planned": 1}, []plan.Finding{scan, stuck, used},
		[]plan.Level{{Kind: "vdo_used", Object: "vdovg/vpool", Percent: 95.02, Alert: 90},
			{Kind: "thin_data", Object: "thinvg/tp", Percent: 40, Alert: 85},
			{Kind: "thin_metadata", Object: "thinvg/tp", Percent: 10.06, Alert: 75}})
	m.Panicked()
	m.WipeStarted("vms", "vm-100-disk-0", func() (uint64, uint64, float64) { return 1 << 30, 4 << 30, 1 << 29 })
	return m
}

// sampleCheck is keel check's Prometheus output for the same kinds.
func sampleCheck(t *testing.T) []byte {
	rep := report.NewReport(report.HostInfo{}, []plan.Finding{scan, stuck, used},
		[]plan.Level{{Kind: "vdo_used", Object: "vdovg/vpool", Percent: 95.02, Alert: 90}}, nil)
	var b bytes.Buffer
	if err := rep.WritePrometheus(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// CI runs promtool on the shipped rules (syntax and their unit tests, in
// which a VDO pool at 95 % alerts) and on both textfiles keel writes.
func TestPromtool(t *testing.T) {
	bin := promtool(t)
	run := func(stdin []byte, dir string, args ...string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir, cmd.Stdin = dir, bytes.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run(nil, rulesDir, "check", "rules", "keel-alerts.yml")
	run(nil, rulesDir, "test", "rules", "keel-alerts.test.yml", "keel-alerts-days.test.yml")
	path := filepath.Join(t.TempDir(), "keel.prom")
	if err := sampleMetrics().WriteTextfile(path); err != nil {
		t.Fatal(err)
	}
	daemon, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	run(daemon, ".", "check", "metrics")
	run(sampleCheck(t), ".", "check", "metrics")
}

// Every alert's unit tests fail when its rule is broken: with every
// expression replaced by one that never fires, promtool test rules must fail
// and name each alert among its failures. An alert with no test in which it
// fires would pass unnoticed here.
func TestPromtoolRulesFailWhenBroken(t *testing.T) {
	bin := promtool(t)
	rules, err := os.ReadFile(filepath.Join(rulesDir, "keel-alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var alerts []string
	var broken strings.Builder
	for _, line := range strings.SplitAfter(string(rules), "\n") {
		trim := strings.TrimSpace(line)
		if name, ok := strings.CutPrefix(trim, "- alert: "); ok {
			alerts = append(alerts, name)
		}
		if strings.HasPrefix(trim, "expr: ") {
			line = line[:strings.Index(line, "expr: ")] + "expr: vector(0) > 1\n"
		}
		broken.WriteString(line)
	}
	if len(alerts) < 15 {
		t.Fatalf("found %d alerts in keel-alerts.yml", len(alerts))
	}
	dir := t.TempDir()
	files := []string{"keel-alerts.test.yml", "keel-alerts-days.test.yml"}
	for _, name := range files {
		b, err := os.ReadFile(filepath.Join(rulesDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "keel-alerts.yml"), []byte(broken.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"test", "rules"}, files...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("promtool test rules passed with every rule broken:\n%s", out)
	}
	failed := map[string]bool{}
	for _, m := range regexp.MustCompile(`alertname: (\w+),`).FindAllStringSubmatch(string(out), -1) {
		failed[m[1]] = true
	}
	for _, a := range alerts {
		if !failed[a] {
			t.Errorf("%s: its rule broken, no unit test failed: add a test in which it fires", a)
		}
	}
}

// The names follow Prometheus's conventions (prometheus.io/docs/practices/
// naming): _total on counters and only there, base units and ratios (no
// percent), the labels vg and lv for LVM objects (never pool), and no two
// names one letter apart. It needs no promtool.
func TestMetricNames(t *testing.T) {
	families, err := sampleMetrics().Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range families {
		name := f.GetName()
		names = append(names, name)
		counter := f.GetType() == dto.MetricType_COUNTER
		if counter != strings.HasSuffix(name, "_total") {
			t.Errorf("%s: a %s; _total belongs on counters and only there", name, f.GetType())
		}
		if strings.Contains(name, "percent") {
			t.Errorf("%s: fill levels are ratios from 0 to 1", name)
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "pool" {
					t.Errorf("%s: label pool; LVM objects are labelled vg, lv", name)
				}
			}
		}
	}
	for _, line := range strings.Split(string(sampleCheck(t)), "\n") {
		if n, ok := strings.CutPrefix(line, "# TYPE "); ok {
			names = append(names, strings.Fields(n)[0])
		}
		if !strings.HasPrefix(line, "#") && (strings.Contains(line, "pool=") || strings.Contains(line, "percent")) {
			t.Errorf("keel check: %q", line)
		}
	}
	for _, want := range []string{"keel_vdo_used_ratio", "keel_thin_data_used_ratio", "keel_thin_metadata_alert_threshold_ratio", "keel_wipe_size_bytes"} {
		if !slices.Contains(names, want) {
			t.Errorf("no %s among %v", want, names)
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	for i, a := range names {
		for _, b := range names[i+1:] {
			if oneApart(a, b) {
				t.Errorf("%s and %s differ by one letter", a, b)
			}
		}
	}
}

// oneApart reports whether b is a with one letter added, removed or changed.
func oneApart(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	switch len(b) - len(a) {
	case 0:
		diff := 0
		for i := range a {
			if a[i] != b[i] {
				diff++
			}
		}
		return diff == 1
	case 1:
		for i := range a {
			if a[i] != b[i] {
				return a[i:] == b[i+1:]
			}
		}
		return true
	}
	return false
}

func TestOneApart(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{{"keel_finding", "keel_findings", true}, {"keel_findings", "keel_finding_active", false}, {"abc", "abd", true}, {"abc", "abc", false}} {
		if got := oneApart(c.a, c.b); got != c.want {
			t.Errorf("oneApart(%q, %q) = %v", c.a, c.b, got)
		}
	}
}
