package report

import (
	"bytes"
	"encoding/xml"
	"github.com/keel-storage/keel/reconcile/plan"
	"github.com/keel-storage/keel/reconcile/report/reporttest"
	"os"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
)

func sampleReport() Report {
	fs := []plan.Finding{
		{ID: "vdo.threads", Severity: plan.Warning, Object: "vdolab/vdopool", Message: "threads differ",
			Expected: "logical 4", Observed: "logical 1", Remedy: "lvchange"},
		{ID: "vdo.layout.journal_off_fast", Severity: plan.Critical, Object: "vdolab/vdopool", Message: `journal on "slow"`},
		{ID: "vdo.slab_remainder", Severity: plan.Info, Object: "vdolab/vdopool", Message: "remainder"},
	}
	ls := []plan.Level{{Kind: "vdo_used", Object: "vdolab/vdopool", Percent: 40.04, Alert: 90},
		{Kind: "thin_data", Object: "vg0/tp", Percent: 0, Alert: 80}}
	return NewReport(HostInfo{Name: "guest", Mode: "desired", CPUs: 2, MemoryBytes: 2 << 30}, fs, ls, []plan.FindingID{"activation.udev_rule", "bcache.udev_rule"})
}

func TestNewReportOrderAndSummary(t *testing.T) {
	r := sampleReport()
	var ids []string
	for _, f := range r.Findings {
		ids = append(ids, string(f.ID))
	}
	if got, want := strings.Join(ids, " "), "vdo.layout.journal_off_fast vdo.threads vdo.slab_remainder"; got != want {
		t.Errorf("order %q, want %q", got, want)
	}
	want := Summary{Total: 3, Critical: 1, Warning: 1, Info: 1}
	if r.Summary != want {
		t.Errorf("summary %+v, want %+v", r.Summary, want)
	}
	if r.Levels[0].Kind != "thin_data" {
		t.Errorf("levels not sorted: %+v", r.Levels)
	}
	if !NewReport(HostInfo{}, []plan.Finding{{ID: "lv.absent", Severity: plan.Info}}, nil, nil).Summary.OK {
		t.Error("a report with only info findings is not OK")
	}
}

func TestReportJSONValidatesAgainstSchema(t *testing.T) {
	for _, r := range []Report{sampleReport(), NewReport(HostInfo{Name: "h", Mode: "audit"}, nil, nil, nil)} {
		var b bytes.Buffer
		if err := r.WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		reporttest.ValidateJSON(t, b.Bytes())
	}
}

// A report that breaks the schema must be rejected, or the validation above
// proves nothing.
func TestReportSchemaRejectsBadReport(t *testing.T) {
	src, err := os.ReadFile(reporttest.SchemaPath())
	if err != nil {
		t.Fatal(err)
	}
	ctx := cuecontext.New()
	def := ctx.CompileBytes(src).LookupPath(cue.ParsePath("#Report"))
	for name, js := range map[string]string{
		"bad severity": `{"host":{"name":"h","mode":"audit","cpus":1,"memoryBytes":1},"findings":[{"id":"vdo.mode","severity":"fatal","object":"a","message":"m"}],"summary":{"total":0,"critical":0,"error":0,"warning":0,"info":0,"ok":true},"levels":[]}`,
		"bad total":    `{"host":{"name":"h","mode":"audit","cpus":1,"memoryBytes":1},"findings":[],"summary":{"total":2,"critical":0,"error":0,"warning":0,"info":0,"ok":true},"levels":[]}`,
		"extra field":  `{"host":{"name":"h","mode":"audit","cpus":1,"memoryBytes":1},"findings":[],"summary":{"total":0,"critical":0,"error":0,"warning":0,"info":0,"ok":true},"levels":[],"x":1}`,
	} {
		if err := def.Unify(ctx.CompileString(js)).Validate(cue.Concrete(true)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestReportJUnitIsStable(t *testing.T) {
	var b bytes.Buffer
	if err := sampleReport().WriteJUnit(&b); err != nil {
		t.Fatal(err)
	}
	var doc junitSuites
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("junit output does not parse: %v", err)
	}
	checked := 0 // every rule but the loop's own (keel check never raises those)
	for _, r := range plan.Catalogue {
		if !r.Runtime() {
			checked++
		}
	}
	if doc.Tests != checked || doc.Failures != 2 || checked != len(plan.Catalogue)-3 {
		t.Errorf("tests=%d failures=%d, want %d (of %d rules) and 2", doc.Tests, doc.Failures, checked, len(plan.Catalogue))
	}
	for _, c := range doc.Suites[0].Cases {
		if c.Name == "vdo.slab_remainder" && (c.Failure != nil || !strings.Contains(c.SystemOut, "remainder")) {
			t.Errorf("info finding: %+v", c)
		}
	}
}

func TestReportPrometheus(t *testing.T) {
	var b bytes.Buffer
	if err := sampleReport().WritePrometheus(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"keel_check_success 1\n",
		`keel_finding_active{id="vdo.layout.journal_off_fast",severity="critical",object="vdolab/vdopool",vg="vdolab",lv="vdopool",undeclared="false"} 1` + "\n",
		`keel_findings{severity="warning"} 1` + "\n",
		`keel_vdo_used_ratio{vg="vdolab",lv="vdopool"} 0.4004` + "\n",
		`keel_vdo_alert_threshold_ratio{vg="vdolab",lv="vdopool"} 0.9` + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("prometheus output lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	if err := WritePrometheusFailure(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(b.String(), "keel_check_success 0\n") {
		t.Errorf("failure form: %q", b.String())
	}
}

func TestObjectLabels(t *testing.T) {
	for obj, want := range map[string][2]string{
		"vdolab/vdopool":    {"vdolab", "vdopool"},
		"thinvg":            {"thinvg", ""},
		"bcache:a3a774bf":   {"", ""},
		"udev:keel.rules":   {"", ""},
		"lvm.conf":          {"", ""},
		"/etc/lvm/lvm.conf": {"", ""},
	} {
		if vg, lv := ObjectLabels(obj); vg != want[0] || lv != want[1] {
			t.Errorf("ObjectLabels(%q) = %q, %q; want %q", obj, vg, lv, want)
		}
	}
}
