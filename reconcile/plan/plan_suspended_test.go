package plan

import (
	"slices"
	"strings"
	"testing"
)

// TestPlanSuspended: the capture e2e/kill makes before its loop: kvg-other
// suspended with a preloaded zero table, as an LVM command killed between
// its suspend and its resume leaves it, and lvm2's hints gone. The pass
// waited, took it for stuck and read LVM without it; the plan resumes it on
// its own table and refreshes the LV, and plans nothing else.
func TestPlanSuspended(t *testing.T) {
	h := replayHost(t, "kill-suspended")
	if !slices.Equal(h.Suspended, []string{"kvg-other"}) {
		t.Fatalf("the capture's suspended devices: %q", h.Suspended)
	}
	r := Plan(loadDesired(t, "kill-suspended", h), h)
	f := findingByKey(t, r, "dm.suspended@kvg-other")
	if f.Severity != Critical || !strings.Contains(f.Message, "LV kvg/other's device") {
		t.Errorf("finding %s: %s", f.Severity, f.Message)
	}
	want := [][]string{{"dmsetup", "clear", "kvg-other"}, {"dmsetup", "resume", "kvg-other"},
		{"lvchange", "--refresh", "kvg/other"}}
	if len(r.Actions) != 1 {
		t.Fatalf("actions %q: want the resume alone", actionIDs(r))
	}
	a := actionByID(t, r, "dm.suspended:kvg-other")
	if a.Kind != KindCommand || a.Class != Live || !slices.EqualFunc(a.Commands, want, slices.Equal) {
		t.Errorf("action %s %v %q, want %q", a.Kind, a.Class, a.Commands, want)
	}
	if f.Remedy != "dmsetup clear kvg-other && dmsetup resume kvg-other && lvchange --refresh kvg/other" {
		t.Errorf("remedy %q", f.Remedy)
	}
	// Without the suspended device the same host plans other work: the
	// resume alone is the suspended pass's doing, not the capture's.
	h.Suspended = nil
	if r := Plan(loadDesired(t, "kill-suspended", h), h); slices.Contains(actionIDs(r), "dm.suspended:kvg-other") {
		t.Errorf("a resume planned with nothing suspended: %q", actionIDs(r))
	}
}

// TestPlanSuspendedNotLVM: a suspended device LVM did not make is reported,
// and nothing is run on it.
func TestPlanSuspendedNotLVM(t *testing.T) {
	h := replayHost(t, "kill-suspended")
	for _, q := range h.Queues {
		if q.DMName == "kvg-other" {
			q.DMUUID = "CRYPT-LUKS2-0123"
		}
	}
	r := Plan(loadDesired(t, "kill-suspended", h), h)
	a := actionByID(t, r, "dm.suspended:kvg-other")
	if a.Kind != KindNone {
		t.Errorf("planned %q on a device LVM did not make", a.Commands)
	}
	if f := findingByKey(t, r, "dm.suspended@kvg-other"); !strings.Contains(f.Message, "not a device LVM made") {
		t.Errorf("message %q", f.Message)
	}
}

// TestPlanSuspendedSharedVG: in a VG lvmlockd locks, the executor cannot
// see an LVM command at work on the device: reported, nothing run.
func TestPlanSuspendedSharedVG(t *testing.T) {
	h := replayHost(t, "kill-suspended")
	h.VGs["kvg"].Shared = true
	r := Plan(loadDesired(t, "kill-suspended", h), h)
	if a := actionByID(t, r, "dm.suspended:kvg-other"); a.Kind != KindNone {
		t.Errorf("planned %q on a device of a shared VG", a.Commands)
	}
	if f := findingByKey(t, r, "dm.suspended@kvg-other"); !strings.Contains(f.Remedy, "no LVM command runs on VG kvg") {
		t.Errorf("remedy %q", f.Remedy)
	}
}

func actionIDs(r Result) []string {
	var ids []string
	for _, a := range r.Actions {
		ids = append(ids, a.ID)
	}
	return ids
}
