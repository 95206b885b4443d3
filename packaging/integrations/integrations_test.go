// Package integrations holds no Go code: its test checks the drop-ins for
// Ansible, Salt, Prometheus and Kubernetes against keel itself (metric
// names the code emits, commands the CLI registers) and parses every YAML
// file with CUE's YAML decoder.
package integrations

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"cuelang.org/go/cue/cuecontext"
	cueyaml "cuelang.org/go/encoding/yaml"
)

// decodeYAML parses a YAML file (several documents become a list) into x.
func decodeYAML(t *testing.T, path string, x any) {
	t.Helper()
	f, err := cueyaml.Extract(path, nil)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	v := cuecontext.New().BuildFile(f)
	if err := v.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if err := v.Decode(x); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// emittedMetrics collects every keel_* metric name in the code that writes
// metrics: the daemon's textfile and keel check's Prometheus output.
func emittedMetrics(t *testing.T) []string {
	t.Helper()
	re := regexp.MustCompile(`"(keel_[a-z_]+)"`)
	var out []string
	for _, p := range []string{"../../cmd/keel/internal/alerts/metrics.go", "../../reconcile/report.go"} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			out = append(out, m[1])
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

type rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

func TestPrometheusRules(t *testing.T) {
	var doc struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []rule `json:"rules"`
		} `json:"groups"`
	}
	decodeYAML(t, "prometheus/keel-alerts.yml", &doc)
	metrics := emittedMetrics(t)
	if !slices.Contains(metrics, "keel_finding_active") || !slices.Contains(metrics, "keel_reconcile_last_success_timestamp_seconds") {
		t.Fatalf("metric scan found %v", metrics)
	}
	docs, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	anchors := headingAnchors(t, "../../docs/findings.md")
	ref := regexp.MustCompile(`\bkeel_[a-z_]+\b`)
	names := map[string]bool{}
	n := 0
	for _, g := range doc.Groups {
		if g.Name == "" {
			t.Error("group without a name")
		}
		for _, r := range g.Rules {
			n++
			if r.Alert == "" || r.Expr == "" || r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("rule %+v: alert, expr, labels.severity and annotations.summary are required", r)
			}
			anchor, ok := strings.CutPrefix(r.Annotations["runbook_url"], "https://github.com/keel-storage/keel/blob/main/docs/findings.md#")
			if !ok {
				t.Errorf("%s: runbook_url %q does not point into docs/findings.md", r.Alert, r.Annotations["runbook_url"])
			} else if !strings.Contains(anchor, "{{") && !anchors[anchor] {
				t.Errorf("%s: docs/findings.md has no section #%s", r.Alert, anchor)
			}
			if names[r.Alert] {
				t.Errorf("alert %s twice", r.Alert)
			}
			names[r.Alert] = true
			if strings.Count(r.Expr, "(") != strings.Count(r.Expr, ")") || strings.Count(r.Expr, "{") != strings.Count(r.Expr, "}") {
				t.Errorf("%s: unbalanced expression %q", r.Alert, r.Expr)
			}
			for _, m := range ref.FindAllString(r.Expr, -1) {
				if !slices.Contains(metrics, m) {
					t.Errorf("%s: metric %s is not emitted by keel (emitted: %v)", r.Alert, m, metrics)
				}
				if m != "keel_check_success" && !strings.Contains(string(docs), "`"+m) {
					t.Errorf("%s: metric %s is not in docs/metrics.md", r.Alert, m)
				}
			}
		}
	}
	if n < 5 {
		t.Errorf("only %d rules", n)
	}
}

// headingAnchors returns the anchors GitHub gives the headings of a
// Markdown file: lower case, spaces to hyphens, punctuation other than
// hyphens and underscores dropped ("## `vdo.usage`" is #vdousage).
func headingAnchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	drop := regexp.MustCompile(`[^a-z0-9 _-]`)
	out := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if h, ok := strings.CutPrefix(line, "#"); ok {
			h = strings.TrimSpace(strings.TrimLeft(h, "#"))
			out[strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(h), ""), " ", "-")] = true
		}
	}
	return out
}

// registered returns the subcommands cmd/keel registers.
func registered(t *testing.T) []string {
	t.Helper()
	files, _ := filepath.Glob("../../cmd/keel/*.go")
	re := regexp.MustCompile(`register\(command\{\s*name:\s*"([a-z-]+)"`)
	var out []string
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			out = append(out, m[1])
		}
	}
	return out
}

func TestDropInsUseRealCommands(t *testing.T) {
	cmds := registered(t)
	if !slices.Contains(cmds, "activate") || !slices.Contains(cmds, "udev-rules") {
		t.Fatalf("registered commands %v", cmds)
	}
	// keel invoked as a command: at the start of a value or after a quote,
	// "name:", "cmd:" or "unless:", never in comments or prose.
	re := regexp.MustCompile(`(?:^|[:"\]]\s*|^\s*-?\s*(?:name|unless|check_cmd):\s*)keel ([a-z][a-z-]+)`)
	for _, p := range []string{"ansible/keel.yml", "salt/keel.sls"} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		used := 0
		for _, line := range strings.Split(string(b), "\n") {
			trim := strings.TrimSpace(line)
			if strings.HasPrefix(trim, "#") {
				continue
			}
			for _, m := range re.FindAllStringSubmatch(trim, -1) {
				used++
				if !slices.Contains(cmds, m[1]) {
					t.Errorf("%s: keel %s is not a keel command (%v)", p, m[1], cmds)
				}
			}
		}
		if used < 3 {
			t.Errorf("%s runs %d keel commands", p, used)
		}
	}
	var tasks []map[string]any
	decodeYAML(t, "ansible/keel.yml", &tasks)
	if len(tasks) < 5 {
		t.Errorf("ansible: %d tasks", len(tasks))
	}
	for _, task := range tasks {
		if _, ok := task["name"]; !ok {
			t.Errorf("ansible task without a name: %v", task)
		}
	}
}

func TestDaemonSet(t *testing.T) {
	var docs []map[string]any
	decodeYAML(t, "kubernetes/keel-daemonset.yaml", &docs)
	if len(docs) != 2 || docs[0]["kind"] != "ConfigMap" || docs[1]["kind"] != "DaemonSet" {
		t.Fatalf("documents: %d", len(docs))
	}
	var ds struct {
		Spec struct {
			Template struct {
				Spec struct {
					HostPID    bool `json:"hostPID"`
					Containers []struct {
						Command         []string `json:"command"`
						Args            []string `json:"args"`
						SecurityContext struct {
							Privileged bool `json:"privileged"`
						} `json:"securityContext"`
						VolumeMounts []struct {
							MountPath string `json:"mountPath"`
						} `json:"volumeMounts"`
					} `json:"containers"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	decodeYAML(t, "kubernetes/keel-daemonset.yaml", &[]any{map[string]any{}, &ds})
	pod := ds.Spec.Template.Spec
	if !pod.HostPID || len(pod.Containers) != 1 || !pod.Containers[0].SecurityContext.Privileged {
		t.Fatalf("pod spec %+v", pod)
	}
	c := pod.Containers[0]
	var mounts []string
	for _, m := range c.VolumeMounts {
		mounts = append(mounts, m.MountPath)
	}
	for _, want := range []string{"/dev", "/sys", "/etc/lvm", "/run/udev", "/run/lvm"} {
		if !slices.Contains(mounts, want) {
			t.Errorf("mount %s missing: %v", want, mounts)
		}
	}
	if c.Command[0] != "nsenter" || !slices.Contains(c.Args, "run") {
		t.Errorf("command %v %v", c.Command, c.Args)
	}
}

// The systemd units name the guest-start units of each hypervisor.
func TestUnitsOrderGuestStart(t *testing.T) {
	b, err := os.ReadFile("../systemd/keel-activate.service")
	if err != nil {
		t.Fatal(err)
	}
	unit := string(b)
	for _, u := range []string{"pve-guests.service", "libvirt-guests.service", "rke2-server.service"} {
		before := regexp.MustCompile(`(?m)^Before=.*\b` + regexp.QuoteMeta(u))
		required := regexp.MustCompile(`(?m)^RequiredBy=.*\b` + regexp.QuoteMeta(u))
		if !before.MatchString(unit) || !required.MatchString(unit) {
			t.Errorf("keel-activate.service: %s needs Before= and RequiredBy=", u)
		}
	}
}
