package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Node snapshots recorded in the qemu test guest and the desired states the
// planner tests use.
const (
	nodesDir   = "../../examples/nodes"
	desiredDir = "../../reconcile/plan/testdata/desired"
)

func runKeel(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

func node(name string) string { return filepath.Join(nodesDir, name+".txtar") }

// convergedNode is a capture that is converged against desired("vdo-split-regrown"):
// the regrown split pool, journal back on the NVMe. (The vdo-thick capture's
// lvm.conf holds the filter keel generated before it followed LVM's alias
// rule, so keel rewrites it there.)
var convergedNode = filepath.Join("../../probes/testdata/snapshots", "vdo-split-regrown.txtar")

func desired(name string) string { return filepath.Join(desiredDir, name+".cue") }

func TestCheckExitCodes(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.cue")
	if err := os.WriteFile(bad, []byte("volumeGroups: vg0: pvs: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		want int
		out  string // must appear on stdout (exit 0/1) or stderr (exit 2)
	}{
		{"converged", []string{"check", "-c", desired("vdo-split-regrown"), "--node", convergedNode}, 0, "0 critical, 0 error, 0 warning"},
		{"leaky filter", []string{"check", "-c", desired("vdo-thick"), "--node", node("vdo-thick")}, 1, "lvm.global_filter"},
		{"drift", []string{"check", "-c", desired("vdo-defaults-tuned"), "--node", node("vdo-defaults")}, 1, "vdo.threads"},
		{"audit", []string{"check", "--audit", "--node", node("thin")}, 1, "thin.chunk_size"},
		{"invalid desired state", []string{"check", "-c", bad, "--node", node("vdo-thick")}, 2, "invalid desired state"},
		{"missing snapshot", []string{"check", "-c", desired("vdo-thick"), "--node", "does-not-exist.txtar"}, 2, "does-not-exist"},
		{"audit with -c", []string{"check", "--audit", "-c", desired("vdo-thick"), "--node", node("thin")}, 2, "usage"},
		{"unknown format", []string{"check", "--format", "yaml", "--node", node("thin")}, 2, "usage"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runKeel(t, c.args...)
			if code != c.want {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, c.want, out, errs)
			}
			where := out
			if code == exitError {
				where = errs
			}
			if !strings.Contains(where, c.out) {
				t.Errorf("output lacks %q:\nstdout:\n%s\nstderr:\n%s", c.out, out, errs)
			}
		})
	}
}

func TestCheckJSONFindingIDs(t *testing.T) {
	code, out, _ := runKeel(t, "check", "-c", desired("thin"), "--node", node("thin"), "--format", "json")
	if code != exitFindings {
		t.Fatalf("exit %d", code)
	}
	var rep struct {
		Findings []struct{ ID, Object string }
		Summary  struct{ OK bool }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, f := range rep.Findings {
		ids = append(ids, f.ID+"@"+f.Object)
	}
	if got := strings.Join(ids, " "); got != "thin.chunk_size@thinvg/tpbad thin.zeroing@thinvg/tpbad" {
		t.Errorf("findings %q", got)
	}
	if rep.Summary.OK {
		t.Error("summary.ok with warnings")
	}
}

// -o writes atomically: the file appears whole and no temporary is left.
func TestCheckOutputFile(t *testing.T) {
	dir := t.TempDir()
	prom := filepath.Join(dir, "keel.prom")
	code, out, errs := runKeel(t, "check", "-c", desired("vdo-split-regrown"), "--node", convergedNode, "--format", "prometheus", "-o", prom)
	if code != exitOK || out != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
	b, err := os.ReadFile(prom)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"keel_check_success 1\n", `keel_vdo_alert_threshold_ratio{vg="vdosplit",lv="pool"} 0.9`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %q:\n%s", prom, want, b)
		}
	}
	// A check that cannot run replaces the file with keel_check_success 0.
	code, _, _ = runKeel(t, "check", "-c", desired("vdo-thick"), "--node", filepath.Join(dir, "none.txtar"), "--format", "prometheus", "-o", prom)
	if code != exitError {
		t.Fatalf("exit %d, want 2", code)
	}
	b, _ = os.ReadFile(prom)
	if string(b) != "# HELP keel_check_success 1 when keel could probe the host and judge it, 0 when it could not.\n# TYPE keel_check_success gauge\nkeel_check_success 0\n" {
		t.Errorf("failure textfile:\n%s", b)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("files left in %s: %v", dir, ents)
	}
	// An unwritable -o is exit 2.
	code, _, errs = runKeel(t, "check", "-c", desired("vdo-thick"), "--node", node("vdo-thick"), "-o", filepath.Join(dir, "no", "such", "dir", "x"))
	if code != exitError || !strings.Contains(errs, "no/such/dir") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
}

func TestPlanCommand(t *testing.T) {
	code, out, errs := runKeel(t, "plan", "-c", desired("vdo-split-regrown"), "--node", convergedNode)
	if code != exitOK || !strings.Contains(out, ": 0 actions\n") {
		t.Errorf("converged plan: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = runKeel(t, "plan", "-c", desired("vdo-defaults-tuned"), "--node", node("vdo-defaults"), "--format", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var pr struct {
		Actions []struct {
			ID       string
			Class    string
			Commands [][]string
		}
	}
	if err := json.Unmarshal([]byte(out), &pr); err != nil {
		t.Fatal(err)
	}
	if len(pr.Actions) != 1 || pr.Actions[0].Class != "maintenance" {
		t.Fatalf("actions: %+v", pr.Actions)
	}
	cmds := pr.Actions[0].Commands
	want := [][]string{
		{"lvchange", "-an", "vdodef/vdolv"},
		{"lvchange", "--vdosettings", "logical_threads=4 physical_threads=4 hash_zone_threads=2 cpu_threads=3 bio_threads=2 ack_threads=1 max_discard=4096", "vdodef/vdopool"},
		{"lvchange", "-ay", "vdodef/vdolv"},
	}
	if got, _ := json.Marshal(cmds); string(got) != mustJSON(want) {
		t.Errorf("commands\n got %s\nwant %s", got, mustJSON(want))
	}
	code, _, _ = runKeel(t, "plan", "--format", "xml")
	if code != exitError {
		t.Errorf("bad format: exit %d", code)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestCheckTiming: with KEEL_TIMING set, keel check ends its stderr with
// when each part ended (the bench's rounds read it), the probe's commands'
// starts and ends among them; without, it prints nothing of the kind.
func TestCheckTiming(t *testing.T) {
	args := []string{"check", "-c", desired("vdo-split-regrown"), "--node", convergedNode}
	if _, _, errs := runKeel(t, args...); strings.Contains(errs, "timing") {
		t.Fatalf("timing printed without KEEL_TIMING:\n%s", errs)
	}
	defer func(p *phaseLog) { phases = p }(phases)
	phases = newPhaseLog(true)
	code, _, errs := runKeel(t, args...)
	if code != exitOK {
		t.Fatalf("exit %d:\n%s", code, errs)
	}
	line := strings.TrimSpace(errs[strings.LastIndex(strings.TrimSpace(errs), "\n")+1:])
	const head = "keel check: timing: ended, in ms since main started: "
	if !strings.HasPrefix(line, head) {
		t.Fatalf("last stderr line %q, want the timing", line)
	}
	var names []string
	for _, m := range strings.Split(strings.TrimPrefix(line, head), ", ") {
		i := strings.LastIndex(m, " ")
		if i < 0 || !strings.HasSuffix(m, "ms") {
			t.Fatalf("mark %q is not NAME Nms", m)
		}
		names = append(names, m[:i])
	}
	for _, want := range []string{"desired state", "state file", "probe pass", "plan", "report",
		"lvm fullreport started", "lvm fullreport ended"} {
		if !slices.Contains(names, want) {
			t.Errorf("marks %v lack %q", names, want)
		}
	}
	if names[len(names)-1] != "report" {
		t.Errorf("marks %v do not end with the report", names)
	}
}
