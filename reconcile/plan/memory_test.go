package plan

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/keel-storage/keel/reconcile/state"
	"github.com/keel-storage/keel/schema/spec"
)

// The vdo-thick snapshot (captured in the test guest) holds
// vdovg/vm-100-disk-0, which vdo-thick-absent declares absent. Its real
// lv_uuid and lv_time decide each case.
func TestPlanWithAbsentIdentity(t *testing.T) {
	h := replayHost(t, "vdo-thick")
	d := loadDesired(t, "vdo-thick-absent", h)
	const object = "vdovg/vm-100-disk-0"
	lv := h.LVs[object]
	if lv == nil {
		t.Fatalf("snapshot lacks %s", object)
	}
	created, ok := state.ParseLVTime(lv.Fields.Get("lv_time"))
	if !ok || lv.UUID == "" {
		t.Fatalf("%s: lv_time %q uuid %q: the probe must report both", object, lv.Fields.Get("lv_time"), lv.UUID)
	}
	before, after := created.Add(-time.Hour), created.Add(time.Hour)
	cases := []struct {
		name    string
		mem     Memory
		wipe    bool      // a lv.absent wipe action is planned
		finding FindingID // the finding ID raised for the object
		text    string    // in the finding's message, observed or remedy
	}{
		// No record: the first sight could not be written, and the entry may
		// be older than the LV (an audit week, then a reused VM id).
		{"no record: held", Memory{}, false, "lv.absent_reappeared", "no record of when it first saw"},
		{"no record: the remedy pins the uuid", Memory{}, false, "lv.absent_reappeared", `{name: "vm-100-disk-0", uuid: "` + lv.UUID + `"}`},
		{"first pass (no state to keep): first sight now", Memory{FirstPass: true}, true, "lv.absent", lv.UUID},
		{"seen after it was created", Memory{Absent: map[string]state.Absent{object: {FirstSeen: after}}}, true, "lv.absent",
			"keel first saw the name in absent at " + state.Stamp(after)},
		{"seen before it was created: reused name", Memory{Absent: map[string]state.Absent{object: {FirstSeen: before}}}, false,
			"lv.absent_reappeared", "keel wipe " + object},
		{"created in the second keel first saw the name", Memory{Absent: map[string]state.Absent{object: {FirstSeen: created.Add(300 * time.Millisecond)}}}, false,
			"lv.absent_reappeared", "after keel first saw the name"},
		{"bound to this LV: resume", Memory{Absent: map[string]state.Absent{object: {FirstSeen: before, Bound: []state.Binding{{UUID: lv.UUID, Started: after}}}}}, true, "lv.absent", ""},
		{"keel removed another LV under the name", Memory{Absent: map[string]state.Absent{object: {FirstSeen: after,
			Bound: []state.Binding{{UUID: "AAAAAA-0000-0000-0000-0000-0000-000000", Started: after, Removed: after}}}}}, false,
			"lv.absent_reappeared", "drop \"vm-100-disk-0\" from volumeGroups.vdovg.absent"},
		{"state unreadable: held", Memory{Held: "state /var/lib/keel/state.json: not a valid keel state file"}, false, "lv.absent", "held"},
	}
	pins := map[string]*spec.Config{}
	pinned := func(uuid string) *spec.Config {
		c := *d
		c.VolumeGroups = maps.Clone(d.VolumeGroups)
		vg := c.VolumeGroups["vdovg"]
		vg.Absent = []spec.AbsentLV{{Name: "vm-100-disk-0", UUID: uuid}}
		c.VolumeGroups["vdovg"] = vg
		return &c
	}
	for _, c := range []struct {
		name    string
		pin     string
		mem     Memory
		wipe    bool
		finding FindingID
		text    string
	}{
		{"pinned to it, no record", lv.UUID, Memory{}, true, "lv.absent", "uuid " + lv.UUID + ", created"},
		{"pinned to it, said", lv.UUID, Memory{}, true, "lv.absent", "the entry pins this uuid"},
		{"pinned to it, seen before it was created", lv.UUID, Memory{Absent: map[string]state.Absent{object: {FirstSeen: before}}}, true, "lv.absent", ""},
		{"pinned to another LV, seen after it was created", "AAAAAA-0000-0000-0000-0000-0000-000000", Memory{Absent: map[string]state.Absent{object: {FirstSeen: after}}}, false,
			"lv.absent_reappeared", "pins uuid AAAAAA-0000-0000-0000-0000-0000-000000"},
	} {
		cases = append(cases, struct {
			name    string
			mem     Memory
			wipe    bool
			finding FindingID
			text    string
		}{c.name, c.mem, c.wipe, c.finding, c.text})
		pins[c.name] = pinned(c.pin)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dd := d
			if p, ok := pins[c.name]; ok {
				dd = p
			}
			res := PlanWith(dd, h, c.mem)
			var wipe bool
			for _, a := range res.Actions {
				if a.Kind == KindWipe && a.Object == object {
					wipe = true
				}
			}
			if wipe != c.wipe {
				t.Errorf("wipe planned: %v, want %v", wipe, c.wipe)
			}
			var f *Finding
			for i := range res.Findings {
				if res.Findings[i].Object == object {
					if f != nil {
						t.Errorf("two findings for %s: %s and %s", object, f.ID, res.Findings[i].ID)
					}
					f = &res.Findings[i]
				}
			}
			if f == nil || f.ID != c.finding {
				t.Fatalf("finding for %s: %+v, want %s", object, f, c.finding)
			}
			if r, _ := Lookup(f.ID); f.Severity != r.Severity {
				t.Errorf("%s severity %v, catalogue says %v", f.ID, f.Severity, r.Severity)
			}
			all := f.Message + " | " + f.Observed + " | " + f.Remedy
			if c.text != "" && !strings.Contains(all, c.text) {
				t.Errorf("finding %q lacks %q", all, c.text)
			}
		})
	}
	// Plan without records plans as on a first sight: the removal.
	if got := Plan(d, h); len(got.Actions) == 0 {
		t.Error("Plan without records planned no removal")
	}
}

// A state keel could not write is said in one state.unrecorded finding
// naming the state file and each unrecorded name; recorded names are not
// listed, and a readable, written state raises nothing.
func TestPlanUnrecorded(t *testing.T) {
	h := replayHost(t, "vdo-thick")
	d := loadDesired(t, "vdo-thick-absent", h)
	const path = "/var/lib/keel/state.json"
	find := func(res Result) *Finding {
		for i := range res.Findings {
			if res.Findings[i].ID == StateUnrecorded {
				return &res.Findings[i]
			}
		}
		return nil
	}
	why := "first sight not recorded: state " + path + ": lock: read-only file system"
	f := find(PlanWith(d, h, Memory{Unrecorded: why, StatePath: path}))
	if f == nil || f.Object != path || !strings.Contains(f.Message, "vdovg/vm-100-disk-0") || !strings.Contains(f.Message, "read-only file system") {
		t.Fatalf("state.unrecorded: %+v", f)
	}
	if r, _ := Lookup(f.ID); f.Severity != r.Severity {
		t.Errorf("severity %v, catalogue says %v", f.Severity, r.Severity)
	}
	recorded := map[string]state.Absent{"vdovg/vm-100-disk-0": {FirstSeen: time.Now()}}
	if f := find(PlanWith(d, h, Memory{Absent: recorded, Unrecorded: why, StatePath: path})); f != nil {
		t.Errorf("every name recorded, still %+v", f)
	}
	if f := find(PlanWith(d, h, Memory{Absent: recorded, StatePath: path})); f != nil {
		t.Errorf("state written, still %+v", f)
	}
}
