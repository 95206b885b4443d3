// Package integrations holds no Go code: its test checks the drop-ins for
// Ansible, Salt, Prometheus and Kubernetes against keel itself (metric
// names the code emits, commands the CLI lists) and parses every YAML
// file with CUE's YAML decoder.
package integrations

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"cuelang.org/go/cue/cuecontext"
	cueyaml "cuelang.org/go/encoding/yaml"

	"github.com/keel-storage/keel/lvm/lvmregex"
	"github.com/keel-storage/keel/schema"
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
	for _, p := range []string{"../../cmd/keel/internal/alerts/metrics.go", "../../reconcile/report/report.go"} {
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

// registered returns the subcommands of cmd/keel's command table.
func registered(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../cmd/keel/cli.go")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^\t\{name:\s*"([a-z-]+)"`)
	var out []string
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		out = append(out, m[1])
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
	for _, p := range []string{"ansible/roles/keel/tasks/main.yml", "salt/keel.sls"} {
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
		if used < 2 {
			t.Errorf("%s runs %d keel commands", p, used)
		}
	}
}

// ansibleTask is the part of an Ansible task the tests read.
type ansibleTask struct {
	Name      string         `json:"name"`
	Notify    any            `json:"notify"`
	Copy      map[string]any `json:"ansible.builtin.copy"`
	Template  map[string]any `json:"ansible.builtin.template"`
	File      map[string]any `json:"ansible.builtin.file"`
	Apt       map[string]any `json:"ansible.builtin.apt"`
	Cmd       any            `json:"ansible.builtin.command"`
	When      any            `json:"when"`
	CheckMode *bool          `json:"check_mode"`
	Block     []ansibleTask  `json:"block"`
	Always    []ansibleTask  `json:"always"`
}

// flatTasks lists the tasks with those of blocks in their place, in order.
func flatTasks(ts []ansibleTask) []ansibleTask {
	var out []ansibleTask
	for _, x := range ts {
		out = append(out, x)
		out = append(out, flatTasks(x.Block)...)
		out = append(out, flatTasks(x.Always)...)
	}
	return out
}

// argv returns a command task's argument vector ("keel udev-rules --write"
// split, its argv list, or an argv template split into words), nil for
// other tasks.
func (x ansibleTask) argv() []string {
	switch c := x.Cmd.(type) {
	case string:
		return strings.Fields(c)
	case map[string]any:
		var out []string
		switch argv := c["argv"].(type) {
		case []any:
			for _, a := range argv {
				out = append(out, fmt.Sprint(a))
			}
		case string:
			out = strings.Fields(argv)
		}
		return out
	}
	return nil
}

// The playbook is one play that applies the keel role and sets no
// variable: play vars beat inventory variables, so a per-host desired state
// in host_vars would be ignored. Every variable the role reads is a role
// default, the lowest precedence there is.
func TestAnsiblePlaybook(t *testing.T) {
	var plays []struct {
		Hosts string         `json:"hosts"`
		Vars  map[string]any `json:"vars"`
		Roles []string       `json:"roles"`
		Tasks []any          `json:"tasks"`
	}
	decodeYAML(t, "ansible/keel.yml", &plays)
	if len(plays) != 1 || !slices.Equal(plays[0].Roles, []string{"keel"}) || len(plays[0].Tasks) != 0 {
		t.Fatalf("plays: %+v: want one play applying the role keel", plays)
	}
	if len(plays[0].Vars) != 0 {
		t.Errorf("play vars %v: they beat host_vars and group_vars; make them role defaults", slices.Sorted(maps.Keys(plays[0].Vars)))
	}
	var defaults map[string]any
	decodeYAML(t, "ansible/roles/keel/defaults/main.yml", &defaults)
	if defaults["keel_mode"] != "audit" {
		t.Errorf("keel_mode defaults to %v, want audit", defaults["keel_mode"])
	}
	// Every keel_ variable the role reads is a default or one the role
	// sets itself (register, set_fact, vars).
	var text strings.Builder
	for _, dir := range []string{"tasks", "handlers", "templates"} {
		ents, err := os.ReadDir(filepath.Join("ansible/roles/keel", dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			b, err := os.ReadFile(filepath.Join("ansible/roles/keel", dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			text.Write(b)
		}
	}
	own := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s*(?:register:\s*|)(keel_[a-z_]+)(?::|$)`).FindAllStringSubmatch(text.String(), -1) {
		own[m[1]] = true
	}
	for _, v := range regexp.MustCompile(`\bkeel_[a-z_]+\b`).FindAllString(text.String(), -1) {
		if _, ok := defaults[v]; !ok && !own[v] {
			t.Errorf("the role reads %s, which is neither a role default nor set by the role", v)
		}
	}
}

// The role's tasks: each named, each notify a handler; in check mode
// nothing outside the staging directory is touched (a task forced to run in
// check mode writes only under keel_stage, by its destination or by a
// command whose arguments name the staged directory, or runs a keel command
// that reads); the whole staged directory is vetted before any change; keel's
// udev rules are written only when converging.
func TestAnsibleRole(t *testing.T) {
	var tasks, handlers []ansibleTask
	decodeYAML(t, "ansible/roles/keel/tasks/main.yml", &tasks)
	decodeYAML(t, "ansible/roles/keel/handlers/main.yml", &handlers)
	names := map[string]bool{}
	for _, h := range handlers {
		names[h.Name] = true
	}
	all := flatTasks(tasks)
	vet, firstChange, writes := -1, -1, 0
	keelCmds := map[string]bool{}
	for i, x := range all {
		if x.Name == "" {
			t.Errorf("ansible task without a name: %+v", x)
		}
		if n, ok := x.Notify.(string); ok && !names[n] {
			t.Errorf("task %q notifies %q, which is not a handler (%v)", x.Name, n, names)
		}
		argv := x.argv()
		sub := ""
		if len(argv) > 1 && strings.Contains(argv[0], "keel") {
			sub = argv[1]
			keelCmds[sub] = true
		}
		if sub == "vet" && vet < 0 {
			vet = i
		}
		if sub == "apply" && !slices.Contains(argv, "--dry-run") {
			t.Errorf("task %q runs keel apply without --dry-run", x.Name)
		}
		if sub == "udev-rules" && slices.Contains(argv, "--write") {
			writes++
			if x.When != "keel_mode == 'converge'" {
				t.Errorf("task %q writes keel's udev rules with when %v: also in audit mode", x.Name, x.When)
			}
		}
		if src, _ := x.Copy["src"].(string); strings.HasSuffix(src, "/") && x.Copy["mode"] != nil && x.Copy["mode"] != "preserve" {
			t.Errorf("task %q copies a directory with mode %v: the copy module gives that mode to the destination directory too", x.Name, x.Copy["mode"])
		}
		dest := fmt.Sprint(x.Copy["dest"], x.Template["dest"], x.File["path"])
		if firstChange < 0 && (x.Apt != nil || strings.Contains(dest, "/etc/keel")) {
			firstChange = i
		}
		if x.CheckMode != nil && !*x.CheckMode {
			staged := strings.Contains(dest, "keel_stage") || slices.ContainsFunc(argv, func(a string) bool { return strings.Contains(a, "keel_stage") })
			reads := slices.Contains([]string{"vet", "plan", "check", "apply"}, sub) || (len(argv) > 0 && argv[0] == "dpkg-deb")
			if x.Copy == nil && x.Template == nil && x.File == nil && x.Cmd == nil {
				staged = true // tempfile and the like
			}
			if x.Cmd != nil && !reads && !staged || x.Cmd == nil && !staged {
				t.Errorf("task %q runs in check mode and may change the host (dest %q, argv %q)", x.Name, dest, argv)
			}
		}
	}
	if vet < 0 || firstChange < 0 || vet > firstChange {
		t.Errorf("keel vet at task %d, the first change at %d: the desired state must be vetted before anything changes", vet, firstChange)
	}
	if writes != 1 {
		t.Errorf("%d tasks write keel's udev rules, want 1", writes)
	}
	for _, want := range []string{"vet", "plan", "apply", "check"} {
		if !keelCmds[want] {
			t.Errorf("the role never runs keel %s (it runs %v)", want, slices.Sorted(maps.Keys(keelCmds)))
		}
	}
	for c := range keelCmds {
		if !slices.Contains(registered(t), c) {
			t.Errorf("the role runs keel %s, which is not a keel command", c)
		}
	}
	b, err := os.ReadFile("ansible/roles/keel/templates/agent.cue.j2")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "agent: mode: \"{{ keel_mode }}\"\n") {
		t.Errorf("agent.cue.j2 does not set agent.mode from keel_mode:\n%s", b)
	}
}

// The playbook and role pass ansible-playbook --syntax-check and
// ansible-lint's production profile (Debian: ansible-core, ansible-lint;
// .ci/install-deps installs them). Without them the test is skipped on a
// workstation and fails under CI (CI set), as TestPromtool does.
func TestAnsibleLint(t *testing.T) {
	for _, c := range [][]string{
		{"ansible-playbook", "--syntax-check", "-i", "localhost,", "keel.yml"},
		{"ansible-lint", "--nocolor", "--profile", "production", "keel.yml", "roles/keel"},
	} {
		if _, err := exec.LookPath(c[0]); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s not found and CI is set: .ci/install-deps installs it", c[0])
			}
			t.Skipf("%s not installed (apt-get install ansible-core ansible-lint)", c[0])
		}
		cmd := exec.Command(c[0], c[1:]...)
		cmd.Dir = "ansible"
		// ansible-lint writes its cache under HOME; keep it out of the tree.
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "ANSIBLE_NOCOLOR=1", "ANSIBLE_LOCAL_TEMP="+t.TempDir())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", strings.Join(c, " "), err, out)
		}
	}
}

// The Salt state vets each file with the whole directory and writes keel's
// udev rules only when converging.
func TestSaltState(t *testing.T) {
	b, err := os.ReadFile("salt/keel.sls")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"check_cmd: /usr/lib/keel/vet-dropin /etc/keel/keel.cue\n", "check_cmd: /usr/lib/keel/vet-dropin /etc/keel/agent.cue\n",
		`'agent: mode: "{{ salt['pillar.get']('keel:mode', 'audit') }}"'`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("salt/keel.sls lacks %s", want)
		}
	}
	// The state writes keel's udev rules only inside the converge block.
	const open, end = "{% if salt['pillar.get']('keel:mode', 'audit') == 'converge' %}", "{% endif %}"
	sls := string(b)
	for i := strings.Index(sls, "keel udev-rules --write"); i >= 0; {
		start := strings.LastIndex(sls[:i], open)
		if start < 0 || strings.Contains(sls[start:i], end) {
			t.Errorf("salt/keel.sls runs keel udev-rules --write outside %s", open)
		}
		next := strings.Index(sls[i+1:], "keel udev-rules --write")
		if next < 0 {
			break
		}
		i += 1 + next
	}
	if !strings.Contains(sls, "keel udev-rules --write") {
		t.Error("salt/keel.sls no longer writes keel's udev rules")
	}
}

// vet-dropin hands keel vet a directory holding every other drop-in and the
// new file under the destination's name (a fake keel records what it got).
func TestVetDropin(t *testing.T) {
	etc, bin := t.TempDir(), t.TempDir()
	for name, body := range map[string]string{"keel.cue": "old", "agent.cue": "agent", "notes.txt": "x"} {
		if err := os.WriteFile(filepath.Join(etc, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	newFile := filepath.Join(t.TempDir(), "tmpXYZ")
	if err := os.WriteFile(newFile, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join(t.TempDir(), "rec")
	fake := filepath.Join(bin, "keel")
	script := "#!/bin/sh\n[ \"$1 $2\" = \"vet -c\" ] || exit 9\nfor f in \"$3\"/*; do printf '%s=%s ' \"$(basename \"$f\")\" \"$(cat \"$f\")\"; done >" + rec + "\nexit ${FAKE_RC:-0}\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(rc string) error {
		cmd := exec.Command("sh", "../lib/vet-dropin", filepath.Join(etc, "keel.cue"), newFile)
		cmd.Env = append(os.Environ(), "KEEL="+fake, "FAKE_RC="+rc)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Logf("%s", out)
		}
		return err
	}
	if err := run("0"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(rec); string(b) != "agent.cue=agent keel.cue=new " {
		t.Errorf("keel vet saw %q", b)
	}
	if err := run("1"); err == nil {
		t.Error("keel vet failed and vet-dropin passed")
	}
	if b, _ := os.ReadFile(filepath.Join(etc, "keel.cue")); string(b) != "old" {
		t.Errorf("vet-dropin changed the live file: %q", b)
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

// podVolume is the part of a pod volume the tests read.
type podVolume struct {
	Name      string `json:"name"`
	ConfigMap struct {
		Name string `json:"name"`
	} `json:"configMap"`
}

// The DaemonSet's desired state is per node: the ConfigMap's base and each
// node file pass keel vet together, and the init container installs the
// base plus its own node's file only, vetted before it replaces the host's
// copy (a failing vet leaves the last good one).
func TestDaemonSetPerNode(t *testing.T) {
	var cm struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Data map[string]string `json:"data"`
	}
	var ds struct {
		Spec struct {
			Template struct {
				Spec struct {
					Volumes        []podVolume `json:"volumes"`
					InitContainers []struct {
						Command []string `json:"command"`
						Env     []struct {
							Name      string `json:"name"`
							ValueFrom struct {
								FieldRef struct {
									FieldPath string `json:"fieldPath"`
								} `json:"fieldRef"`
							} `json:"valueFrom"`
						} `json:"env"`
					} `json:"initContainers"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	decodeYAML(t, "kubernetes/keel-daemonset.yaml", &[]any{&cm, map[string]any{}})
	decodeYAML(t, "kubernetes/keel-daemonset.yaml", &[]any{map[string]any{}, &ds})
	if !slices.ContainsFunc(ds.Spec.Template.Spec.Volumes, func(v podVolume) bool {
		return v.Name == "desired" && v.ConfigMap.Name == cm.Metadata.Name && cm.Metadata.Name != ""
	}) {
		t.Errorf("the DaemonSet's desired volume does not mount the ConfigMap %q", cm.Metadata.Name)
	}
	base, ok := cm.Data["00-base.cue"]
	if !ok {
		t.Fatalf("ConfigMap keys %v: no 00-base.cue", slices.Sorted(maps.Keys(cm.Data)))
	}
	nodes := 0
	for key, body := range cm.Data {
		if !strings.HasPrefix(key, "node-") {
			continue
		}
		nodes++
		dir := t.TempDir()
		for name, b := range map[string]string{"00-base.cue": base, "50-node.cue": body} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(b), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := schema.NewLoader().Load(dir); err != nil {
			t.Errorf("base + %s: keel vet refuses it: %v", key, err)
		}
	}
	if nodes == 0 {
		t.Error("ConfigMap has no node-<name>.cue example")
	}
	if len(ds.Spec.Template.Spec.InitContainers) != 1 {
		t.Fatal("want one init container")
	}
	ic := ds.Spec.Template.Spec.InitContainers[0]
	if len(ic.Env) != 1 || ic.Env[0].Name != "NODE_NAME" || ic.Env[0].ValueFrom.FieldRef.FieldPath != "spec.nodeName" {
		t.Fatalf("init container env %+v: want NODE_NAME from spec.nodeName", ic.Env)
	}
	if len(ic.Command) != 3 || ic.Command[0] != "sh" || ic.Command[1] != "-c" {
		t.Fatalf("init container command %q", ic.Command)
	}
	// Run the script against a fake root: its paths moved under a temporary
	// directory, keel a fake that records what it vetted.
	root := t.TempDir()
	rec := filepath.Join(root, "vetted")
	fake := filepath.Join(root, "keel")
	fakeBody := "#!/bin/sh\n[ \"$1 $2\" = \"vet -c\" ] || exit 9\nls \"$3\" >" + rec + "\nexit ${FAKE_RC:-0}\n"
	if err := os.WriteFile(fake, []byte(fakeBody), 0o755); err != nil {
		t.Fatal(err)
	}
	desired := filepath.Join(root, "desired")
	host := filepath.Join(root, "host")
	for _, d := range []string{desired, filepath.Join(host, "desired")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for key, body := range cm.Data {
		if err := os.WriteFile(filepath.Join(desired, key), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(desired, "node-other.cue"), []byte("// another node's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(host, "desired", "00-base.cue"), []byte("// last good\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := strings.NewReplacer("/host/var/lib/keel", host, "/desired/", desired+"/", "/usr/bin/keel", fake).Replace(ic.Command[2])
	run := func(node, rc string) (string, error) {
		cmd := exec.Command("sh", "-c", script)
		cmd.Env = append(os.Environ(), "NODE_NAME="+node, "FAKE_RC="+rc)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	installed := func() []string {
		ents, _ := os.ReadDir(filepath.Join(host, "desired"))
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		return names
	}
	// A node whose vet fails: the host keeps its last good desired state.
	if out, err := run("harvester-01", "1"); err == nil {
		t.Fatalf("a failing keel vet did not fail the init container:\n%s", out)
	}
	if got := installed(); !slices.Equal(got, []string{"00-base.cue"}) {
		t.Errorf("after a failed vet the host has %q", got)
	} else if b, _ := os.ReadFile(filepath.Join(host, "desired", "00-base.cue")); string(b) != "// last good\n" {
		t.Errorf("after a failed vet the host's base is %q", b)
	}
	if out, err := run("harvester-01", "0"); err != nil {
		t.Fatalf("init script: %v\n%s", err, out)
	}
	if got := installed(); !slices.Equal(got, []string{"00-base.cue", "50-node.cue"}) {
		t.Errorf("harvester-01 got %q, want the base and its own file", got)
	}
	if b, _ := os.ReadFile(filepath.Join(host, "desired", "50-node.cue")); string(b) != cm.Data["node-harvester-01.cue"] {
		t.Errorf("50-node.cue is not node-harvester-01.cue: %q", b)
	}
	if v, _ := os.ReadFile(rec); string(v) != "00-base.cue\n50-node.cue\n" {
		t.Errorf("keel vet saw %q", v)
	}
	// A node without a file of its own: the base alone, and a message.
	out, err := run("harvester-09", "0")
	if err != nil {
		t.Fatalf("init script: %v\n%s", err, out)
	}
	if got := installed(); !slices.Equal(got, []string{"00-base.cue"}) || !strings.Contains(out, "no node-harvester-09.cue") {
		t.Errorf("harvester-09 got %q, output %q", got, out)
	}
	if _, err := os.Stat(filepath.Join(host, "bin", "keel")); err != nil {
		t.Errorf("keel binary not installed on the host: %v", err)
	}
}

// The image the DaemonSet runs: keel on a base that has nsenter.
func TestContainerfile(t *testing.T) {
	b, err := os.ReadFile("kubernetes/Containerfile")
	if err != nil {
		t.Fatal(err)
	}
	cf := string(b)
	for _, want := range []string{"\nFROM ", "\nCOPY bin/keel /usr/bin/keel\n", "command -v nsenter"} {
		if !strings.Contains(cf, want) {
			t.Errorf("Containerfile lacks %q", want)
		}
	}
}

// The systemd units order the guest-start units of each hypervisor after
// keel-activate without requiring it: a failed activation must not keep
// every guest down (pve-guests.service refuses a manual start).
func TestUnitsOrderGuestStart(t *testing.T) {
	b, err := os.ReadFile("../systemd/keel-activate.service")
	if err != nil {
		t.Fatal(err)
	}
	unit := string(b)
	for _, u := range []string{"pve-guests.service", "libvirt-guests.service", "rke2-server.service", "rke2-agent.service",
		"libvirtd.service", "virtqemud.service"} {
		if !regexp.MustCompile(`(?m)^Before=.*\b` + regexp.QuoteMeta(u)).MatchString(unit) {
			t.Errorf("keel-activate.service: not Before=%s", u)
		}
	}
	if m := regexp.MustCompile(`(?m)^(RequiredBy|Requires|BindsTo|RequisiteOf|Requisite)=.*$`).FindString(unit); m != "" {
		t.Errorf("keel-activate.service: %q: a failed activation would keep the guests down", m)
	}
	if !regexp.MustCompile(`(?m)^WantedBy=multi-user\.target$`).MatchString(unit) {
		t.Error("keel-activate.service: not WantedBy=multi-user.target: Before= orders only units in the transaction")
	}
}

// keel.service and keel-activate.service start after pve-cluster.service
// (pmxcfs mounts /etc/pve, where storage.cfg lives), ordered only: neither
// pulls it in, so the units still start where it does not exist.
func TestUnitsAfterPVECluster(t *testing.T) {
	after := regexp.MustCompile(`(?m)^After=.*\bpve-cluster\.service\b`)
	pulls := regexp.MustCompile(`(?m)^(Wants|Requires|Requisite|BindsTo)=.*\bpve-cluster\.service\b`)
	for _, name := range []string{"keel.service", "keel-activate.service"} {
		b, err := os.ReadFile("../systemd/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if !after.Match(b) {
			t.Errorf("%s: not After=pve-cluster.service", name)
		}
		if pulls.Match(b) {
			t.Errorf("%s: pulls pve-cluster.service in; it must only be ordered after it", name)
		}
	}
}

// keel.service may write what keel run writes: lvm.conf, its udev rules,
// its state and node_exporter's textfile directory; the alerts hook may
// reach the network. keel-check.service skips itself while keel.service
// runs, so one file has one writer.
func TestUnitSandbox(t *testing.T) {
	b, err := os.ReadFile("../systemd/keel.service")
	if err != nil {
		t.Fatal(err)
	}
	unit := string(b)
	rw := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^ReadWritePaths=(.*)$`).FindAllStringSubmatch(unit, -1) {
		for _, p := range strings.Fields(m[1]) {
			rw[strings.TrimPrefix(p, "-")] = true
		}
	}
	for _, p := range []string{"/etc/lvm", "/run", "/etc/udev/rules.d", "/var/lib/prometheus/node-exporter"} {
		if !rw[p] {
			t.Errorf("keel.service: %s is not in ReadWritePaths= (%v)", p, rw)
		}
	}
	if !strings.Contains(unit, "\nProtectSystem=strict\n") || !strings.Contains(unit, "\nStateDirectory=keel\n") {
		t.Error("keel.service: ProtectSystem=strict with StateDirectory=keel expected")
	}
	if regexp.MustCompile(`(?m)^IPAddressDeny=`).MatchString(unit) || !regexp.MustCompile(`(?m)^RestrictAddressFamilies=.*\bAF_INET\b`).MatchString(unit) {
		t.Error("keel.service: the alerts hook cannot reach the network")
	}
	b, err = os.ReadFile("../systemd/keel-check.service")
	if err != nil {
		t.Fatal(err)
	}
	check := string(b)
	for _, want := range []string{"\nExecCondition=/bin/sh -c '! systemctl is-active --quiet keel.service'\n",
		"\nExecStart=/usr/bin/keel check --format prometheus -o /var/lib/prometheus/node-exporter/keel.prom\n", "\nSuccessExitStatus=1\n"} {
		if !strings.Contains(check, want) {
			t.Errorf("keel-check.service lacks %q", want)
		}
	}
	if _, err := os.Stat("../systemd/keel-check.timer"); err != nil {
		t.Error(err)
	}
}

// harvesterNodeFilter is the global_filter Harvester writes on every node
// (harvester/os2, files/system/oem/91_lvm.yaml, at each boot's initramfs
// stage).
var harvesterNodeFilter = []string{`r|/dev/loop.*|`, `r|/dev/disk/by-path/.*longhorn.*|`, `r|/dev/mapper/pvc-.*|`}

// TestHarvesterBase: the DaemonSet's base declares the Harvester node's own
// filter, so keel writes nothing on a stock node, and that filter hides a
// Longhorn v1 volume by the names LVM sees for it whether LVM scans /dev
// itself (lvm2's default, obtain_device_list_from_udev = 0: every block
// node, the /dev/longhorn mknod copy included, lib/device/dev-cache.c
// _insert_dir) or takes names from udev (= 1: udev's nodes and links only,
// _insert_udev_dir), while the node's own disk stays visible. The previous
// base, rejects of /dev/mapper/pvc-.* and /dev/longhorn/.*, let the volume
// through udev's names. The volume's names: the iSCSI disk Longhorn's engine
// exports as iqn.2019-10.io.longhorn:<volume>, named by udev's path_id
// "ip-<portal>-iscsi-<target>-lun-<lun>", and the mknod copy under
// /dev/longhorn (Longhorn's DuplicateDevice).
func TestHarvesterBase(t *testing.T) {
	var cm struct {
		Data map[string]string `json:"data"`
	}
	decodeYAML(t, "kubernetes/keel-daemonset.yaml", &[]any{&cm, map[string]any{}})
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "00-base.cue"), []byte(cm.Data["00-base.cue"]), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := schema.NewLoader().Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := d.Config.LVM.GlobalFilter.Entries()
	if !slices.Equal(got, harvesterNodeFilter) {
		t.Errorf("the base writes %q, not the Harvester node's filter %q", got, harvesterNodeFilter)
	}
	vol := "pvc-3f2d8a41-6c1e-4b8e-9f0a-2d7c5e1b9a63"
	udevNames := []string{"/dev/sdc", "/dev/block/8:32",
		"/dev/disk/by-path/ip-10.52.0.27:3260-iscsi-iqn.2019-10.io.longhorn:" + vol + "-lun-1",
		"/dev/disk/by-id/scsi-360000000000000000e00000000010001", "/dev/disk/by-id/wwn-0x60000000000000000e00000000010001"}
	scanned := append(slices.Clone(udevNames), "/dev/longhorn/"+vol)
	rootDisk := []string{"/dev/sda", "/dev/block/8:0", "/dev/disk/by-path/pci-0000:00:17.0-ata-1",
		"/dev/disk/by-id/ata-SAMSUNG_MZ7LH960HAJR-00005_S45NNE0M123456"}
	old, err := lvmregex.NewFilter([]string{`r|/dev/mapper/pvc-.*|`, `r|/dev/longhorn/.*|`})
	if err != nil {
		t.Fatal(err)
	}
	base, err := lvmregex.NewFilter(got)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what    string
		f       *lvmregex.Filter
		names   []string
		visible bool
	}{
		{"the base, the volume by udev's names", base, udevNames, false},
		{"the base, the volume by /dev scan", base, scanned, false},
		{"the base, the node's disk", base, rootDisk, true},
		{"the old base, the volume by udev's names", old, udevNames, true},
	} {
		if v := c.f.Decide(c.names); v.Accepted != c.visible {
			t.Errorf("%s: visible %v (%+v), want %v", c.what, v.Accepted, v, c.visible)
		}
	}
}
