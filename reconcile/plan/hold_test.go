package plan

import (
	"strings"
	"testing"
	"time"

	"github.com/keel-storage/keel/reconcile/activation"
	"github.com/keel-storage/keel/reconcile/state"
	"github.com/keel-storage/keel/schema/spec"
)

// TestPlanHold: the bcache capture with b0 declared writethrough (it runs
// writeback). Held by its declared name or its kernel name, its cache_mode
// write becomes a report naming the hold, hold.active shows the hold, and
// keel's bcache rule has no line for it; a lapsed hold holds nothing and
// says so.
func TestPlanHold(t *testing.T) {
	h := replayHost(t, "bcache")
	d := loadDesired(t, "bcache-drift", h)
	t0 := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	free := PlanWith(d, h, Memory{FirstPass: true, Now: t0})
	var modeID string
	for _, a := range free.Actions {
		if strings.HasPrefix(a.ID, "bcache.cache_mode:") && a.Kind == KindSysfs {
			modeID = a.ID
		}
	}
	if modeID == "" {
		t.Fatalf("no cache_mode write planned without a hold: %q", actionIDs(free))
	}
	var dev string
	for _, b := range h.Bcache {
		dev = b.Device
	}
	for _, obj := range []string{"b0", dev} {
		hold := state.Hold{Reason: "drain the cache SSD", Since: t0, Until: t0.Add(time.Hour)}
		mem := Memory{FirstPass: true, Now: t0.Add(time.Minute), Holds: map[string]state.Hold{obj: hold}}
		r := PlanWith(d, h, mem)
		a := actionByID(t, r, modeID)
		if a.Kind != KindNone || !strings.Contains(a.Summary, "held by keel hold "+obj+" (drain the cache SSD, until 2026-12-04T11:00:00Z)") {
			t.Errorf("hold %s: action %s %q", obj, a.Kind, a.Summary)
		}
		f := findingByKey(t, r, "hold.active@"+obj)
		if f.Severity != Info || !strings.Contains(f.Message, "drain the cache SSD") || f.Remedy != "once the work on it is done: keel release "+obj {
			t.Errorf("hold %s: finding %s %q %q", obj, f.Severity, f.Message, f.Remedy)
		}
		rules, err := activation.RulesHeld(d, h, newPlanner(h).bcacheDevice, HeldBcache(d, h, mem))
		if err != nil {
			t.Fatal(err)
		}
		if c := rules[1].Content; strings.Contains(c, "ATTR{bcache/cache_mode}") || !strings.Contains(c, "# b0: held by keel hold "+obj) {
			t.Errorf("hold %s: the bcache rule still writes b0's tunables:\n%s", obj, c)
		}
		// Lapsed: it holds nothing and says so.
		mem.Now = t0.Add(2 * time.Hour)
		r = PlanWith(d, h, mem)
		if a := actionByID(t, r, modeID); a.Kind != KindSysfs {
			t.Errorf("lapsed hold %s still holds: %s", obj, a.Kind)
		}
		if f := findingByKey(t, r, "hold.expired@"+obj); !strings.Contains(f.Remedy, "keel release "+obj) {
			t.Errorf("lapsed hold %s: remedy %q", obj, f.Remedy)
		}
	}
}

// TestPlanHoldVG: a hold on a VG holds the resume of its LV's suspended
// device too, even where the desired state opts in to resuming it.
func TestPlanHoldVG(t *testing.T) {
	h := replayHost(t, "kill-suspended")
	d := loadDesired(t, "kill-suspended", h)
	d.Agent.ResumeSuspendedMinutes = 1
	t0 := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	mem := Memory{FirstPass: true, Now: t0.Add(time.Hour), Suspended: map[string]state.Suspended{"kvg-other": {QuietSince: t0}},
		Holds: map[string]state.Hold{"kvg": {Reason: "table swap", Since: t0}}}
	r := PlanWith(d, h, mem)
	if a := actionByID(t, r, "dm.suspended:kvg-other"); a.Kind != KindNone || !strings.Contains(a.Summary, "held by keel hold kvg (table swap, until keel release)") {
		t.Errorf("resume of a held VG's device: %s %q", a.Kind, a.Summary)
	}
}

// TestPlanHoldLV: a hold on "vg/lv" holds the resume of its device.
func TestPlanHoldLV(t *testing.T) {
	h := replayHost(t, "kill-suspended")
	d := loadDesired(t, "kill-suspended", h)
	d.Agent.ResumeSuspendedMinutes = 1
	t0 := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	mem := Memory{FirstPass: true, Now: t0.Add(time.Hour), Suspended: map[string]state.Suspended{"kvg-other": {QuietSince: t0}},
		Holds: map[string]state.Hold{"kvg/other": {Reason: "table swap", Since: t0}}}
	if a := actionByID(t, PlanWith(d, h, mem), "dm.suspended:kvg-other"); a.Kind != KindNone {
		t.Errorf("resume of a held LV's device planned: %q", a.Commands)
	}
}

// TestPlanHoldDesired: a holds entry of the desired state holds as keel
// hold does, through its until day; its remedies name the entry.
func TestPlanHoldDesired(t *testing.T) {
	h := replayHost(t, "bcache")
	d := loadDesired(t, "bcache-drift", h)
	d.Holds = []spec.Hold{{Object: "b0", Reason: "drain the cache SSD", Until: "2026-12-04"}}
	mem := Memory{FirstPass: true, Now: time.Date(2026, 12, 4, 23, 59, 0, 0, time.UTC)}
	r := PlanWith(d, h, mem)
	for _, a := range r.Actions {
		if strings.HasPrefix(a.ID, "bcache.cache_mode:") && a.Kind != KindNone {
			t.Errorf("held by the desired state, still planned: %s", a.ID)
		}
	}
	if f := findingByKey(t, r, "hold.active@b0"); !strings.Contains(f.Remedy, "remove the holds entry of b0") {
		t.Errorf("remedy %q", f.Remedy)
	}
	mem.Now = time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	if f := findingByKey(t, PlanWith(d, h, mem), "hold.expired@b0"); !strings.Contains(f.Remedy, "move its until to a later day") {
		t.Errorf("lapsed: remedy %q", f.Remedy)
	}
}
