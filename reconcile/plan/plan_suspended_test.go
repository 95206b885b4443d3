package plan

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/reconcile/state"
)

// TestPlanSuspended: the capture e2e/kill makes before its loop: kvg-other
// suspended with a preloaded zero table, as an LVM command killed between
// its suspend and its resume leaves it, and lvm2's hints gone. The pass
// waited, took it for stuck and read LVM without it. Without the desired
// state's opt-in it is reported, critical, with the commands that resume
// it as its remedy, and nothing runs: whoever suspended it may need it so.
func TestPlanSuspended(t *testing.T) {
	h := replayHost(t, "kill-suspended")
	if !slices.Equal(h.Suspended, []string{"kvg-other"}) {
		t.Fatalf("the capture's suspended devices: %q", h.Suspended)
	}
	r := Plan(loadDesired(t, "kill-suspended", h), h)
	f := findingByKey(t, r, "dm.suspended@kvg-other")
	if f.Severity != Critical || !strings.Contains(f.Message, "LV kvg/other's device") || !strings.Contains(f.Message, "agent.resumeSuspendedMinutes") {
		t.Errorf("finding %s: %s", f.Severity, f.Message)
	}
	if a := actionByID(t, r, "dm.suspended:kvg-other"); a.Kind != KindNone || len(r.Actions) != 1 {
		t.Errorf("planned %q without the desired state's opt-in", actionIDs(r))
	}
	if f.Remedy != "dmsetup clear kvg-other && dmsetup resume kvg-other && lvchange --refresh kvg/other" {
		t.Errorf("remedy %q", f.Remedy)
	}
	// Without the suspended device the same host plans other work: the
	// report alone is the suspended pass's doing, not the capture's.
	h.Suspended = nil
	if r := Plan(loadDesired(t, "kill-suspended", h), h); slices.Contains(actionIDs(r), "dm.suspended:kvg-other") {
		t.Errorf("a resume planned with nothing suspended: %q", actionIDs(r))
	}
}

// TestPlanSuspendedOptIn: with agent.resumeSuspendedMinutes, keel resumes
// the device on its own table and refreshes the LV once its record says no
// LVM or dmsetup command was seen on it for that long; before that, or
// with a command on the VG now, or without a clock, it only reports.
func TestPlanSuspendedOptIn(t *testing.T) {
	h := replayHost(t, "kill-suspended")
	d := loadDesired(t, "kill-suspended", h)
	d.Agent.ResumeSuspendedMinutes = 10
	t0 := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	mem := func(now time.Time) Memory {
		return Memory{FirstPass: true, Now: now, Suspended: map[string]state.Suspended{"kvg-other": {QuietSince: t0}}}
	}
	if q := SuspendedQuiet(h); !q["kvg-other"] {
		t.Errorf("quiet %v: the capture has no LVM command running", q)
	}
	for _, c := range []struct {
		what string
		mem  Memory
		want string
	}{
		{"no record yet", Memory{FirstPass: true, Now: t0}, "has no record of how long it was quiet"},
		{"no clock", mem(time.Time{}), "has no record of how long it was quiet"},
		{"quiet for 9 minutes", mem(t0.Add(9 * time.Minute)), "keel resumes it at 2026-12-04T10:10:00Z"},
	} {
		r := PlanWith(d, h, c.mem)
		if a := actionByID(t, r, "dm.suspended:kvg-other"); a.Kind != KindNone {
			t.Errorf("%s: planned %q", c.what, a.Commands)
		}
		if f := findingByKey(t, r, "dm.suspended@kvg-other"); !strings.Contains(f.Message, c.want) {
			t.Errorf("%s: message %q lacks %q", c.what, f.Message, c.want)
		}
	}
	r := PlanWith(d, h, mem(t0.Add(10*time.Minute)))
	want := [][]string{{"dmsetup", "clear", "kvg-other"}, {"dmsetup", "resume", "kvg-other"},
		{"lvchange", "--refresh", "kvg/other"}}
	a := actionByID(t, r, "dm.suspended:kvg-other")
	if a.Kind != KindCommand || a.Class != Live || !slices.EqualFunc(a.Commands, want, slices.Equal) || len(r.Actions) != 1 {
		t.Errorf("after 10 quiet minutes: action %s %v %q, want %q alone", a.Kind, a.Class, a.Commands, want)
	}
	// An LVM command on the VG now (a backup tool's lvcreate --snapshot)
	// holds it whatever the record says; one on another VG does not.
	h.Commands = []model.Process{{PID: 4242, Argv: []string{"lvcreate", "-s", "-n", "bk", "kvg/other"}}}
	r = PlanWith(d, h, mem(t0.Add(time.Hour)))
	if a := actionByID(t, r, "dm.suspended:kvg-other"); a.Kind != KindNone {
		t.Errorf("resumed with an LVM command on the VG: %q", a.Commands)
	}
	if f := findingByKey(t, r, "dm.suspended@kvg-other"); !strings.Contains(f.Message, "4242 lvcreate -s -n bk kvg/other") {
		t.Errorf("message %q does not name the command", f.Message)
	}
	if q := SuspendedQuiet(h); q["kvg-other"] {
		t.Error("quiet with an LVM command on the VG")
	}
	h.Commands = []model.Process{{PID: 4243, Argv: []string{"lvs", "othervg"}}}
	h.VGs["othervg"] = &model.VG{Name: "othervg"}
	if q := SuspendedQuiet(h); !q["kvg-other"] {
		t.Error("an LVM command on another VG counted")
	}
	h.Commands = []model.Process{{PID: 4244, Argv: []string{"dmsetup", "suspend", "kvg-other"}}}
	if q := SuspendedQuiet(h); q["kvg-other"] {
		t.Error("dmsetup naming the device not counted")
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

// TestPlanSuspendedBusy: the capture e2e/ownership/suspend.sh makes: an
// LV's device suspended by hand while a dmsetup command waits on it
// (dmsetup wait). Even with the opt-in and a quiet record an hour old,
// keel does not resume it: a command is on the device, and the message
// names it by PID and arguments.
func TestPlanSuspendedBusy(t *testing.T) {
	const dm = "vmdata-vm--100--disk--0"
	h := replayHost(t, "suspend-busy")
	if !slices.Equal(h.Suspended, []string{dm}) {
		t.Fatalf("the capture's suspended devices: %q", h.Suspended)
	}
	if q := SuspendedQuiet(h); q[dm] {
		t.Errorf("quiet with dmsetup waiting on it: %q", h.Commands)
	}
	d := loadDesired(t, "suspend-busy", h)
	d.Agent.ResumeSuspendedMinutes = 1
	t0 := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	r := PlanWith(d, h, Memory{FirstPass: true, Now: t0.Add(time.Hour), Suspended: map[string]state.Suspended{dm: {QuietSince: t0}}})
	if a := actionByID(t, r, "dm.suspended:"+dm); a.Kind != KindNone {
		t.Errorf("resumed with dmsetup waiting on it: %q", a.Commands)
	}
	if f := findingByKey(t, r, "dm.suspended@"+dm); !strings.Contains(f.Message, " dmsetup wait "+dm) {
		t.Errorf("message %q does not name the command", f.Message)
	}
}
