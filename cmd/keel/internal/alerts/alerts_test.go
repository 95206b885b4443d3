package alerts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/keel-storage/keel/reconcile/plan"
)

var (
	scan  = plan.Finding{ID: "lvm.scan_lvs", Severity: plan.Error, Object: "lvm.conf", Expected: "1", Observed: "0"}
	stuck = plan.Finding{ID: "reconcile.stuck", Severity: plan.Error, Object: "bcache:a3a774bf", Message: "writeback_percent clamped"}
	used  = plan.Finding{ID: "vdo.used", Severity: plan.Warning, Object: "vg0/vpool"}
)

func kinds(ts []Transition) string {
	var s []string
	for _, t := range ts {
		s = append(s, string(t.Kind)+" "+t.Finding.Key())
	}
	return strings.Join(s, ", ")
}

func TestTransitionsOnly(t *testing.T) {
	tr := NewTracker()
	if got := kinds(tr.Update([]plan.Finding{scan, used})); got != "raised lvm.scan_lvs@lvm.conf, raised vdo.used@vg0/vpool" {
		t.Fatal(got)
	}
	// Same findings again: nothing to say.
	if got := tr.Update([]plan.Finding{used, scan}); len(got) != 0 {
		t.Fatalf("repeated: %v", kinds(got))
	}
	// One clears, one appears, one changes severity.
	worse := used
	worse.Severity = plan.Critical
	got := kinds(tr.Update([]plan.Finding{worse, stuck}))
	if got != "cleared lvm.scan_lvs@lvm.conf, raised reconcile.stuck@bcache:a3a774bf, raised vdo.used@vg0/vpool" {
		t.Fatal(got)
	}
	if a := tr.Active(); len(a) != 2 || a[1].Severity != plan.Critical {
		t.Fatalf("active %+v", a)
	}
}

func TestLog(t *testing.T) {
	var buf bytes.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Info})
	Log(log, []Transition{{Raised, scan}, {Raised, used}, {Cleared, scan}})
	out := buf.String()
	for _, want := range []string{
		"[ERROR] finding raised: finding=lvm.scan_lvs object=lvm.conf severity=error",
		"[WARN]  finding raised: finding=vdo.used object=vg0/vpool severity=warning",
		"[INFO]  finding cleared: finding=lvm.scan_lvs object=lvm.conf severity=error\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
}

func TestHook(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "hook")
	out := filepath.Join(dir, "out")
	// The hook appends its environment line and its stdin to out.
	body := "#!/bin/sh\necho \"$KEEL_ALERT $KEEL_FINDING_ID $KEEL_OBJECT $KEEL_SEVERITY $KEEL_OBSERVED $1\" >> " + out + "\ncat >> " + out + "\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	h := Hook{Argv: []string{script, "arg1"}}
	if err := h.Run(context.Background(), []Transition{{Raised, scan}, {Cleared, scan}}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 4 || lines[0] != "raised lvm.scan_lvs lvm.conf error 0 arg1" || lines[2] != "cleared lvm.scan_lvs lvm.conf error 0 arg1" {
		t.Fatalf("hook saw %q", lines)
	}
	var got Transition
	if err := json.Unmarshal([]byte(lines[1]), &got); err != nil || got.Kind != Raised || got.Finding.Key() != scan.Key() {
		t.Fatalf("stdin %q: %v", lines[1], err)
	}
	if err := (Hook{Argv: []string{"hook"}}).Run(context.Background(), nil); err == nil {
		t.Fatal("relative hook path accepted")
	}
	fail := filepath.Join(dir, "fail")
	os.WriteFile(fail, []byte("#!/bin/sh\necho nope >&2\nexit 3\n"), 0o755)
	if err := (Hook{Argv: []string{fail}}).Run(context.Background(), []Transition{{Raised, used}}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("err %v", err)
	}
	slow := filepath.Join(dir, "slow")
	os.WriteFile(slow, []byte("#!/bin/sh\nexec sleep 10\n"), 0o755)
	start := time.Now()
	if err := (Hook{Argv: []string{slow}, Timeout: 100 * time.Millisecond}).Run(context.Background(), []Transition{{Raised, used}}); err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("slow hook: %v after %v", err, time.Since(start))
	}
}

func TestTextfile(t *testing.T) {
	m := NewMetrics()
	at := time.Unix(1764374400, 0)
	m.Reload(true, at)
	m.Pass(at, nil, map[string]int{"converged": 2, "stuck": 1}, []plan.Finding{scan, stuck, used},
		[]plan.Level{{Kind: "vdo_used", Object: "vdovg/vpool", Percent: 95.02, Alert: 90}, {Kind: "thin_data", Object: "thinvg/tp", Percent: 40, Alert: 85}})
	m.Pass(at.Add(time.Minute), errors.New("probe failed"), nil, []plan.Finding{stuck},
		[]plan.Level{{Kind: "vdo_used", Object: "vdovg/vpool", Percent: 95.02, Alert: 90}})
	m.Reload(false, at.Add(2*time.Minute))
	path := filepath.Join(t.TempDir(), "keel.prom")
	if err := m.WriteTextfile(path); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	s := string(b)
	for _, want := range []string{
		"keel_config_last_reload_successful 0\n",
		"keel_config_last_reload_success_timestamp_seconds 1.7643744e+09\n",
		"keel_reconcile_last_success_timestamp_seconds 1.7643744e+09\n",
		"keel_reconcile_errors_total 1\n",
		"keel_reconcile_passes_total 2\n",
		`keel_reconcile_actions_total{status="converged"} 2` + "\n",
		`keel_finding_active{id="reconcile.stuck",lv="",object="bcache:a3a774bf",severity="error",undeclared="false",vg=""} 1` + "\n",
		`keel_findings{severity="error"} 1` + "\n",
		`keel_findings{severity="warning"} 0` + "\n",
		"keel_actions_stuck 1\n",
		"# HELP keel_finding_active ",
		`keel_vdo_used_ratio{lv="vpool",vg="vdovg"} 0.9502` + "\n",
		`keel_vdo_alert_threshold_ratio{lv="vpool",vg="vdovg"} 0.9` + "\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("missing %q in\n%s", want, s)
		}
	}
	// Cleared findings are gone from the gauges, not left at 1.
	if strings.Contains(s, "lvm.scan_lvs") || strings.Contains(s, `lv="tp"`) {
		t.Errorf("cleared finding still exported:\n%s", s)
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Errorf("temporary files left: %v", ents)
	}
}

// A finding on a pool the desired state does not declare says so in the
// journal and to the hook, as the metric's undeclared label does.
func TestUndeclaredMarked(t *testing.T) {
	f := plan.Finding{ID: plan.VDOOvercommit, Severity: plan.Error, Object: "vdodef/vdolv", Message: "overcommitted", Undeclared: true}
	var buf bytes.Buffer
	Log(hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Info}), []Transition{{Raised, f}})
	if !strings.Contains(buf.String(), "undeclared=true") {
		t.Errorf("log lacks undeclared=true:\n%s", buf.String())
	}
	dir := t.TempDir()
	script, out := filepath.Join(dir, "hook"), filepath.Join(dir, "out")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"$KEEL_UNDECLARED\" > "+out+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := (Hook{Argv: []string{script}}).Run(context.Background(), []Transition{{Raised, f}}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(out); string(b) != "true\n" {
		t.Errorf("hook saw KEEL_UNDECLARED=%q, want true", b)
	}
}
