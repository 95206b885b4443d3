package plan

import (
	"slices"
	"strings"
	"testing"

	"github.com/keel-storage/keel/probes/model"
)

// The captures of e2e/health/raid.sh (KEEL_RAID_SNAPSHOT_DIR), each a node
// snapshot taken by keel snapshot in the guest at one step of the scenario.

// raidFindings are r's raid.* findings as "id object" lines, sorted.
func raidFindings(r Result) []string {
	var out []string
	for _, f := range r.Findings {
		if strings.HasPrefix(string(f.ID), "raid.") {
			out = append(out, string(f.ID)+" "+f.Object)
		}
	}
	slices.Sort(out)
	return out
}

// raidLevel is the raid_sync level of object in r, -1 when absent.
func raidLevel(r Result, object string) float64 {
	for _, l := range r.Levels {
		if l.Kind == "raid_sync" && l.Object == object {
			return l.Percent
		}
	}
	return -1
}

// planRAIDCapture replays the capture raid-<name> and plans it against the
// scenario's desired state.
func planRAIDCapture(t *testing.T, name string) (*model.Host, Result) {
	t.Helper()
	h := replayHost(t, "raid-"+name)
	return h, Plan(loadDesired(t, "raid", h), h)
}

// A whole md raid1 under mdvg's PV and an LVM raid1 LV in sync raise
// nothing, and their sync levels read 1.
func TestRAIDClean(t *testing.T) {
	h, r := planRAIDCapture(t, "md-clean")
	a := h.MD["md0"]
	if a == nil || a.Level != "raid1" || a.Degraded != 0 || a.RaidDisks != 2 || len(a.Members) != 2 {
		t.Fatalf("md0 as probed: %+v", a)
	}
	for _, m := range a.Members {
		if m.Faulty() || !strings.Contains(m.State, "in_sync") {
			t.Errorf("member %s state %q, want in_sync", m.Device, m.State)
		}
	}
	if got := raidFindings(r); len(got) != 0 {
		t.Errorf("md-clean: raid findings %q, want none", got)
	}
	if l := raidLevel(r, "/dev/md0"); l != 100 {
		t.Errorf("md-clean: raid_sync level of /dev/md0 %v, want 100", l)
	}

	h, r = planRAIDCapture(t, "lvmraid-clean")
	lv := h.LVs["raidvg/r1"]
	if lv == nil || !lv.IsRAID() || lv.HealthStatus() != "" || lv.SyncPercent() != 100 {
		t.Fatalf("raidvg/r1 as probed: %+v", lv)
	}
	if h.LVs["raidvg/r1_rimage_0"] == nil || h.LVs["raidvg/r1_rimage_0"].IsRAID() {
		t.Error("raidvg/r1_rimage_0: a hidden image counts as a RAID LV of its own")
	}
	if got := raidFindings(r); len(got) != 0 {
		t.Errorf("lvmraid-clean: raid findings %q, want none", got)
	}
	if l := raidLevel(r, "raidvg/r1"); l != 100 {
		t.Errorf("lvmraid-clean: raid_sync level of raidvg/r1 %v, want 100", l)
	}
}

// mdadm --fail on one member: md marks it faulty and the array degraded;
// raid.degraded names it, and the remedy (the one e2e/health/raid.sh types)
// takes the same member back.
func TestRAIDMDFailedMember(t *testing.T) {
	h, r := planRAIDCapture(t, "md-degraded")
	a := h.MD["md0"]
	var faulty []string
	for _, m := range a.Members {
		if m.Faulty() {
			faulty = append(faulty, m.Device)
		}
	}
	if a.Degraded != 1 || len(faulty) != 1 {
		t.Fatalf("md0 as probed: degraded %d, faulty %q; want 1 and one member", a.Degraded, faulty)
	}
	if got, want := raidFindings(r), []string{"raid.degraded /dev/md0"}; !slices.Equal(got, want) {
		t.Fatalf("raid findings %q, want %q", got, want)
	}
	f := findingsOf(r, RAIDDegraded)[0]
	m := "/dev/" + faulty[0]
	want := "mdadm /dev/md0 --remove " + m + " && mdadm --zero-superblock " + m + " && mdadm /dev/md0 --add " + m
	if f.Severity != Error || f.Remedy != want {
		t.Errorf("raid.degraded: %s, remedy %q; want error, %q", f.Severity, f.Remedy, want)
	}
	if !strings.Contains(f.Message, "VG mdvg") {
		t.Errorf("raid.degraded message does not name the VG on the array: %s", f.Message)
	}
}

// The member back, md recovers onto it: still degraded (no member faulty,
// so no remedy), and resyncing with its progress.
func TestRAIDMDRecovering(t *testing.T) {
	h, r := planRAIDCapture(t, "md-recovering")
	a := h.MD["md0"]
	if a.SyncAction != "recover" || a.SyncTotal == 0 || a.SyncDone >= a.SyncTotal {
		t.Fatalf("md0 as probed: sync_action %q, %d / %d; want a recovery under way", a.SyncAction, a.SyncDone, a.SyncTotal)
	}
	if got, want := raidFindings(r), []string{"raid.degraded /dev/md0", "raid.resyncing /dev/md0"}; !slices.Equal(got, want) {
		t.Fatalf("raid findings %q, want %q", got, want)
	}
	if f := findingsOf(r, RAIDDegraded)[0]; f.Remedy != "" {
		t.Errorf("raid.degraded during a recovery: remedy %q, want none (no member to take back)", f.Remedy)
	}
	if l := raidLevel(r, "/dev/md0"); l < 0 || l >= 100 {
		t.Errorf("raid_sync level of /dev/md0 %v, want below 100", l)
	}
}

// An LVM RAID LV with a leg's disk offline is partial: raid.degraded with
// lvmraid(7)'s repair, which e2e/health/raid.sh types onto the spare PV.
// The disk back, the kernel still has the leg failed and LVM says "refresh
// needed": raid.refresh_needed with lvchange --refresh (keel before this
// rule reported nothing there at all, keel check exit 0).
func TestRAIDLVMLeg(t *testing.T) {
	for _, c := range []struct {
		capture, health string
		id              FindingID
		sev             Severity
		remedy          string
	}{
		{"lvmraid-partial", model.HealthPartial, RAIDDegraded, Error, "lvconvert --repair raidvg/r1"},
		{"lvmraid-refresh", model.HealthRefreshNeeded, RAIDRefreshNeeded, Warning, "lvchange --refresh raidvg/r1"},
	} {
		h, r := planRAIDCapture(t, c.capture)
		if got := h.LVs["raidvg/r1"].HealthStatus(); got != c.health {
			t.Fatalf("%s: lv_health_status %q, want %q", c.capture, got, c.health)
		}
		if got, want := raidFindings(r), []string{string(c.id) + " raidvg/r1"}; !slices.Equal(got, want) {
			t.Fatalf("%s: raid findings %q, want %q", c.capture, got, want)
		}
		if f := findingsOf(r, c.id)[0]; f.Severity != c.sev || f.Remedy != c.remedy {
			t.Errorf("%s: %s %s, remedy %q; want %s, %q", c.capture, c.id, f.Severity, f.Remedy, c.sev, c.remedy)
		}
	}
}

// A RAID of a VG the desired state does not declare is judged all the same
// and marked undeclared; agent.auditUndeclared false leaves it out; keel
// check --audit judges it.
func TestRAIDUndeclared(t *testing.T) {
	h := replayHost(t, "raid-md-degraded")
	r := Plan(loadDesired(t, "agent-only", h), h)
	got := findingsOf(r, RAIDDegraded)
	if len(got) != 1 || !got[0].Undeclared || got[0].Object != "/dev/md0" {
		t.Errorf("agent-only: raid.degraded %+v, want one on /dev/md0 marked undeclared", got)
	}
	if got := findingsOf(Audit(h), RAIDDegraded); len(got) != 1 || got[0].Undeclared {
		t.Errorf("audit: raid.degraded %+v, want one, not marked", got)
	}
	d := loadDesired(t, "agent-only", h)
	off := false
	d.Agent.AuditUndeclared = &off
	if got := findingsOf(Plan(d, h), RAIDDegraded); len(got) != 0 {
		t.Errorf("auditUndeclared false: raid.degraded %+v, want none", got)
	}
}

// A scrub that found mismatches: derived from the clean captures (no
// scenario step makes the copies differ), the counts set as md and LVM
// report them after a check.
func TestRAIDMismatches(t *testing.T) {
	h := replayHost(t, "raid-md-clean")
	h.MD["md0"].MismatchCount = 128
	r := Plan(loadDesired(t, "raid", h), h)
	if f := findingsOf(r, RAIDMismatches); len(f) != 1 || f[0].Remedy != "echo repair > /sys/block/md0/md/sync_action" {
		t.Errorf("md mismatches: %+v", f)
	}
	h.MD["md0"].SyncAction = "check"
	h.MD["md0"].SyncDone, h.MD["md0"].SyncTotal = 10, 100
	r = Plan(loadDesired(t, "raid", h), h)
	if f := findingsOf(r, RAIDMismatches); len(f) != 0 {
		t.Errorf("md mismatches while a check runs (the count is in flux): %+v", f)
	}
}

// lvm.raidFaultPolicy "allocate" on the guest's lvm2, whose
// raid_fault_policy is its default "warn": lvm.raid_fault_policy and an
// lvm.conf action that writes the declared value; "warn" declared is
// already in force, nothing to do.
func TestRAIDFaultPolicy(t *testing.T) {
	h := replayHost(t, "raid-lvmraid-clean")
	if got := h.LVMConfig.Values["activation/raid_fault_policy"]; got != `"warn"` {
		t.Fatalf("capture's raid_fault_policy %s, want \"warn\"", got)
	}
	d := loadDesired(t, "raid-policy", h)
	r := Plan(d, h)
	f := findingsOf(r, LVMRaidFaultPolicy)
	if len(f) != 1 || f[0].Expected != `raid_fault_policy="allocate"` || f[0].Observed != `raid_fault_policy="warn"` {
		t.Fatalf("lvm.raid_fault_policy: %+v", f)
	}
	var ch *LVMConfChange
	for _, a := range r.Actions {
		if a.Kind == KindLVMConf {
			ch = a.LVMConf
		}
	}
	if ch == nil || ch.RaidFaultPolicy != "allocate" || ch.ScanLVs != nil || ch.GlobalFilter != nil {
		t.Fatalf("lvm.conf change %+v, want raid_fault_policy alone", ch)
	}
	if got := ch.Lines(); !slices.Equal(got, []string{`activation/raid_fault_policy = "allocate"`}) {
		t.Errorf("keel plan lines %q", got)
	}
	if len(findingsOf(r, LVMInitramfsStale)) != 0 {
		t.Error("lvm.initramfs_stale for raid_fault_policy, which early boot does not read")
	}
	d.LVM.RaidFaultPolicy = "warn"
	if f := findingsOf(Plan(d, h), LVMRaidFaultPolicy); len(f) != 0 {
		t.Errorf("warn declared and in force: %+v", f)
	}
}
