package plan

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/keel-storage/keel/lvm"
	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/reconcile/activation"
	"github.com/keel-storage/keel/schema"
	"github.com/keel-storage/keel/schema/spec"
)

// withRules sets what the probe read of keel's two udev rules files: the
// captured snapshots predate that read, so each test states it.
func withRules(h *model.Host, pv, bc *model.KeelFile) {
	h.KeelFiles = map[string]*model.KeelFile{activation.PVScanRule: pv, activation.BcacheRule: bc}
	pv.Path, bc.Path = activation.PVScanRule, activation.BcacheRule
}

// editedDesired loads the desired state in path as edit rewrites it.
func editedDesired(t *testing.T, path string, edit func(string) string) *spec.Config {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	edited := filepath.Join(t.TempDir(), filepath.Base(path))
	if err := os.WriteFile(edited, []byte(edit(string(src))), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := schema.NewLoader().Load(edited)
	if err != nil {
		t.Fatal(err)
	}
	return d.Config
}

func udevFindings(r Result) []string {
	var out []string
	for _, f := range r.Findings {
		if strings.HasSuffix(string(f.ID), ".udev_rule") {
			out = append(out, f.Key()+"="+f.Observed)
		}
	}
	return out
}

func TestUdevRulesNotRecordedAreNotEvaluated(t *testing.T) {
	h := replayHost(t, "bcache")
	r := Plan(loadDesired(t, "bcache", h), h)
	if got := udevFindings(r); len(got) != 0 {
		t.Errorf("findings on unrecorded rules: %q", got)
	}
	if !slices.Equal(r.NotEvaluated, []FindingID{"activation.udev_rule", "bcache.udev_rule"}) {
		t.Errorf("not evaluated %q", r.NotEvaluated)
	}
	if a := Audit(h); !slices.Equal(a.NotEvaluated, []FindingID{"activation.udev_rule", "bcache.udev_rule"}) {
		t.Errorf("audit: not evaluated %q", a.NotEvaluated)
	}
}

func TestUdevRulesMissingBcacheRule(t *testing.T) {
	h := replayHost(t, "bcache")
	d := loadDesired(t, "bcache", h)
	withRules(h, &model.KeelFile{Missing: true}, &model.KeelFile{Missing: true})
	r := Plan(d, h)
	// No stacked VG is declared: the PV rule says so, and its absence is
	// not drift. The bcache rule is missing.
	want := []string{"bcache.udev_rule@udev:" + activation.BcacheRule + "=missing"}
	if got := udevFindings(r); !slices.Equal(got, want) {
		t.Fatalf("findings %q, want %q", got, want)
	}
	if len(r.NotEvaluated) != 0 {
		t.Errorf("not evaluated %q", r.NotEvaluated)
	}
	if len(r.Actions) != 1 || r.Actions[0].Kind != KindFile || r.Actions[0].Class != Live {
		t.Fatalf("actions %+v", r.Actions)
	}
	a := r.Actions[0]
	if len(a.Files) != 1 || a.Files[0].Path != activation.BcacheRule || a.Files[0].Mode != 0o644 {
		t.Fatalf("files %+v", a.Files)
	}
	var uuid string
	for u := range h.Bcache {
		uuid = u
	}
	rule := `ENV{CACHED_UUID}=="` + uuid + `", ATTR{bcache/cache_mode}="writeback", ATTR{bcache/sequential_cutoff}="0", ATTR{bcache/writeback_percent}="40"`
	if !strings.Contains(a.Files[0].Content, rule) {
		t.Errorf("content lacks %s:\n%s", rule, a.Files[0].Content)
	}
	if len(a.Commands) != 1 || !slices.Equal(a.Commands[0], UdevReload) {
		t.Errorf("commands %q", a.Commands)
	}
	if !slices.Equal(a.Remedies, []string{"bcache.udev_rule@udev:" + activation.BcacheRule}) {
		t.Errorf("remedies %q", a.Remedies)
	}

	// Once the host has what was planned, nothing is left.
	withRules(h, &model.KeelFile{Missing: true}, &model.KeelFile{Content: a.Files[0].Content})
	if r := Plan(d, h); len(udevFindings(r)) != 0 || len(r.Actions) != 0 {
		t.Errorf("after the write: findings %q, actions %+v", udevFindings(r), r.Actions)
	}
	// A hand edit is drift.
	withRules(h, &model.KeelFile{Missing: true}, &model.KeelFile{Content: a.Files[0].Content + "# mine\n"})
	if got := udevFindings(Plan(d, h)); !slices.Equal(got, []string{"bcache.udev_rule@udev:" + activation.BcacheRule + "=differs"}) {
		t.Errorf("edited: %q", got)
	}
	// One unreadable file is not judged; the other still is.
	withRules(h, &model.KeelFile{Unknown: "permission denied"}, &model.KeelFile{Missing: true})
	r = Plan(d, h)
	if !slices.Equal(r.NotEvaluated, []FindingID{"activation.udev_rule"}) || len(udevFindings(r)) != 1 {
		t.Errorf("unknown PV rule: not evaluated %q, findings %q", r.NotEvaluated, udevFindings(r))
	}
}

func TestUdevPVRuleNamesTheLowerLVByUUID(t *testing.T) {
	h := replayHost(t, "vdo-defaults")
	d := loadDesired(t, "vdo-defaults-stacked", h)
	withRules(h, &model.KeelFile{Missing: true}, &model.KeelFile{Missing: true})
	r := Plan(d, h)
	if got := udevFindings(r); !slices.Equal(got, []string{"activation.udev_rule@udev:" + activation.PVScanRule + "=missing"}) {
		t.Fatalf("findings %q", got)
	}
	var write *Action
	for i := range r.Actions {
		if r.Actions[i].Kind == KindFile {
			write = &r.Actions[i]
		}
	}
	if write == nil {
		t.Fatalf("no file action in %+v", r.Actions)
	}
	lv, vg := h.LVs["vdodef/vdolv"], h.VGs["vdodef"]
	if lv == nil || vg == nil {
		t.Fatal("snapshot lacks vdodef/vdolv")
	}
	want := `ENV{DM_UUID}=="` + lvm.DMUUID(vg.UUID, lv.UUID) + `", ENV{LVM_PVSCAN_ON_LVS}="1"`
	if !strings.Contains(write.Files[0].Content, want) {
		t.Errorf("PV rule lacks %s:\n%s", want, write.Files[0].Content)
	}
	if last := r.Actions[len(r.Actions)-1]; last.ID != write.ID {
		t.Errorf("the rule is not the last live action: %q last", last.ID)
	}
}

func TestUdevRuleWaitsForCreation(t *testing.T) {
	h := replayHost(t, "vdo-split")
	// A VG to stack on the pool still to be created.
	d := editedDesired(t, filepath.Join("testdata", "desired", "vdo-split-create.cue"), func(src string) string {
		return src + "volumeGroups: vdostack: pvs: [\"/dev/vdosplit/vdolv2\"]\n"
	})
	withRules(h, &model.KeelFile{Missing: true}, &model.KeelFile{Missing: true})
	r := Plan(d, h)
	creates := 0
	for _, a := range r.Actions {
		if a.Kind == KindFile {
			t.Errorf("rule written while the stack is still to be created: %+v", a)
		}
		if a.Kind == KindCommand && len(a.Commands) > 0 && a.Commands[0][0] == "lvcreate" {
			creates++
		}
	}
	if creates == 0 {
		t.Fatalf("no creation planned: %+v", r.Actions)
	}
	got := udevFindings(r)
	if !slices.Equal(got, []string{"activation.udev_rule@udev:" + activation.PVScanRule + "=missing"}) {
		t.Fatalf("findings %q", got)
	}
	for _, f := range r.Findings {
		if f.ID == "activation.udev_rule" && !strings.Contains(f.Remedy, "after the stack is created") {
			t.Errorf("remedy %q", f.Remedy)
		}
	}
}

// The bcache rule is written before the tunables it carries: the rule
// applies on every "change" uevent of the device, and udev synthesizes one
// when LVM (or anything) closes bcache0 after writing to it, so a rule
// still holding the old values would put them back between the two writes.
func TestBcacheRuleBeforeItsTunables(t *testing.T) {
	h := replayHost(t, "bcache")
	d := loadDesired(t, "bcache-drift", h)
	withRules(h, &model.KeelFile{Missing: true}, &model.KeelFile{Missing: true})
	r := Plan(d, h)
	rule, firstTunable := -1, -1
	for i, a := range r.Actions {
		switch {
		case a.ID == "bcache.udev_rule:"+activation.BcacheRule:
			rule = i
		case strings.HasPrefix(a.ID, "bcache.") && a.Kind == KindSysfs && firstTunable < 0:
			firstTunable = i
		}
	}
	if rule < 0 || firstTunable < 0 {
		t.Fatalf("want both a rule write and a tunable write, got %d actions: %+v", len(r.Actions), r.Actions)
	}
	if rule > firstTunable {
		t.Errorf("the bcache rule is written at %d, after the first tunable at %d", rule, firstTunable)
	}
}

// The bcache rule does not wait for a creation in the same pass: it names
// each cached device by its backing device's bcache UUID, which no lvcreate
// or vgcreate changes, and a pass that creates something on bcache0 (a PV,
// a pool) commits LVM metadata to it, whose close-after-write "change"
// uevent makes the old rule put the old tunables back. Only the PV rule,
// which names created LVs, waits.
func TestBcacheRuleDoesNotWaitForCreation(t *testing.T) {
	h := replayHost(t, "vdo-on-bcache")
	// A thin pool still to be created on the cached VG, and a tunable
	// that drifts.
	d := editedDesired(t, filepath.Join("..", "..", "examples", "vdo-on-bcache.cue"), func(src string) string {
		return strings.Replace(src, "writebackPercent: 40", "writebackPercent: 30", 1) +
			"volumeGroups: vdosplit: thinPools: tnew: {size: \"1G\", create: true}\n"
	})
	withRules(h, &model.KeelFile{Missing: true}, &model.KeelFile{Missing: true})
	r := Plan(d, h)
	rule, tunable, create, pvRule := -1, -1, -1, -1
	for i, a := range r.Actions {
		switch {
		case a.ID == "bcache.udev_rule:"+activation.BcacheRule:
			rule = i
		case a.ID == "activation.udev_rule:"+activation.PVScanRule:
			pvRule = i
		case strings.HasPrefix(a.ID, "bcache.") && a.Kind == KindSysfs && tunable < 0:
			tunable = i
		case a.Kind == KindCommand && len(a.Commands) > 0 && a.Commands[0][0] == "lvcreate" && create < 0:
			create = i
		}
	}
	if create < 0 || tunable < 0 {
		t.Fatalf("want a creation and a tunable write, got %+v", r.Actions)
	}
	if rule < 0 {
		t.Fatalf("the bcache rule waits for the creation: %+v", r.Actions)
	}
	if rule > tunable {
		t.Errorf("the bcache rule is written at %d, after the first tunable at %d", rule, tunable)
	}
	if pvRule >= 0 {
		t.Errorf("the PV rule is written while the stack is still to be created: %+v", r.Actions[pvRule])
	}
	for _, f := range r.Findings {
		if f.ID == "bcache.udev_rule" && strings.Contains(f.Remedy, "after the stack is created") {
			t.Errorf("bcache rule remedy %q", f.Remedy)
		}
	}
}

// Each of keel's two udev rules files has its own finding ID.
func TestUdevRuleID(t *testing.T) {
	if got := UdevRuleID(activation.PVScanRule); got != ActivationUdevRule {
		t.Errorf("PV-scan rule: %s, want %s", got, ActivationUdevRule)
	}
	if got := UdevRuleID(activation.BcacheRule); got != BcacheUdevRule {
		t.Errorf("bcache rule: %s, want %s", got, BcacheUdevRule)
	}
}
