package plan

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/keel-storage/keel/probes/model"
	"github.com/keel-storage/keel/probes/shell"
)

// planRAID judges the redundancy under the pools: LVM RAID LVs (lvmraid(7);
// lv_health_status, sync_percent and raid_mismatch_count as lvs(8) and
// lvm2's lib/report/report.c give them) and the md arrays that hold a PV
// (the kernel's Documentation/admin-guide/md.rst). Those of declared VGs
// are findings like any other; the others are judged as audit judges them
// and marked undeclared (auditUndeclared), unless that is turned off. A
// RAID that lost a member still serves every read and write, so nothing
// else in the report shows it until the next failure loses the data.
func (p *planner) planRAID() {
	for _, key := range p.sortedLVKeys() {
		lv := p.h.LVs[key]
		if !lv.IsRAID() {
			continue
		}
		p.judgeRAID(p.declaresVG(lv.VG), func() { p.raidLV(lv) })
	}
	for _, dev := range slices.Sorted(maps.Keys(p.h.MD)) {
		a := p.h.MD[dev]
		pvs, vgs := p.pvsOnMD(a)
		if len(pvs) == 0 {
			continue // no PV on it: not under a pool
		}
		declared := slices.ContainsFunc(vgs, p.declaresVG)
		p.judgeRAID(declared, func() { p.mdArray(a, pvs, vgs) })
	}
}

// declaresVG reports whether the desired state declares vg.
func (p *planner) declaresVG(vg string) bool {
	if p.d == nil {
		return false
	}
	_, ok := p.d.VolumeGroups[vg]
	return ok
}

// judgeRAID runs judge on a RAID of a declared VG, and on any in audit;
// on one of an undeclared VG only when undeclared pools are audited, its
// findings then marked undeclared.
func (p *planner) judgeRAID(declared bool, judge func()) {
	switch {
	case p.audit || declared:
		judge()
	case p.d.Agent.AuditsUndeclared():
		p.auditIfUndeclared(false, judge)
	}
}

// raidLV judges one LVM RAID LV by lv_health_status: "partial" (a leg's PV
// missing), "refresh needed" (the kernel failed a leg whose PV LVM sees),
// "mismatches exist" (the last scrub found differing copies); and its
// sync_percent while it resyncs.
func (p *planner) raidLV(lv *model.LV) {
	name := lv.FullName
	health := lv.HealthStatus()
	sync := lv.SyncPercent()
	p.level("raid_sync", name, sync, 0)
	switch {
	case health == model.HealthPartial:
		missing := p.missingPVs(lv.VG)
		what := "a PV of its VG is missing"
		if len(missing) > 0 && !slices.Contains(missing, "[unknown]") {
			// LVM names a PV it cannot find "[unknown]": no name to give.
			what = "PV " + strings.Join(missing, ", ") + " of its VG is missing"
		}
		// lvmraid(7), "Replacing failed devices": lvconvert --repair
		// replaces the failed images with new ones on other PVs of the VG
		// (it asks for confirmation); "Refreshing an LV": a device that
		// comes back is taken up again with lvchange --refresh.
		p.add(Finding{ID: RAIDDegraded, Object: name,
			Message:  fmt.Sprintf("LVM RAID LV %s is partial: %s, its data rests on the other legs; the repair rebuilds the lost legs on free extents of other PVs of the VG (vgextend one first if none has room); if the PV comes back instead, lvchange --refresh takes it up again", name, what),
			Expected: "lv_health_status \"\"", Observed: fmt.Sprintf("lv_health_status %q", health),
			Remedy: shell.Join([]string{"lvconvert", "--repair", name})})
	case health == model.HealthRefreshNeeded:
		p.add(Finding{ID: RAIDRefreshNeeded, Object: name,
			Message:  fmt.Sprintf("LVM RAID LV %s has a leg the kernel failed while its PV is present again (a transient error): it runs without that leg's redundancy until refreshed; the refresh resyncs the leg", name),
			Expected: "lv_health_status \"\"", Observed: fmt.Sprintf("lv_health_status %q", health),
			Remedy: shell.Join([]string{"lvchange", "--refresh", name})})
	case health == model.HealthMismatches || (health == "" && lv.RaidMismatchCount() > 0):
		// lvmraid(7), "Scrubbing": check counts, repair rewrites the
		// differing blocks from one copy.
		p.add(Finding{ID: RAIDMismatches, Object: name,
			Message:  fmt.Sprintf("the last scrub of LVM RAID LV %s found %d mismatched blocks between its copies; a repair scrub rewrites them from one copy", name, lv.RaidMismatchCount()),
			Expected: "raid_mismatch_count 0", Observed: fmt.Sprintf("raid_mismatch_count %d", lv.RaidMismatchCount()),
			Remedy: shell.Join([]string{"lvchange", "--syncaction", "repair", name})})
	}
	if sync >= 0 && sync < 100 {
		p.add(Finding{ID: RAIDResyncing, Object: name,
			Message:  fmt.Sprintf("LVM RAID LV %s is %s: %.2f%% in sync", name, orWord(lv.RaidSyncAction(), "resyncing"), sync),
			Expected: "sync_percent 100.00", Observed: fmt.Sprintf("sync_percent %.2f", sync)})
	}
}

// missingPVs are the PVs of vg LVM reports missing (pv_attr's third
// character "m", pvs(8)), sorted.
func (p *planner) missingPVs(vg string) []string {
	var out []string
	for name, pv := range p.h.PVs {
		if pv.VG == vg && len(pv.Attr) >= 3 && pv.Attr[2] == 'm' {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// pvsOnMD are the PVs on md array a or one of its partitions, and their
// VGs, each sorted.
func (p *planner) pvsOnMD(a *model.MDArray) (pvs, vgs []string) {
	for name, pv := range p.h.PVs {
		if a.Holds(pv.Device) {
			pvs = append(pvs, name)
			if pv.VG != "" && !slices.Contains(vgs, pv.VG) {
				vgs = append(vgs, pv.VG)
			}
		}
	}
	slices.Sort(pvs)
	slices.Sort(vgs)
	return pvs, vgs
}

// mdArray judges one md array under PVs: failed members or fewer than
// raid_disks (md/degraded), a broken array, a running sync, mismatches.
func (p *planner) mdArray(a *model.MDArray, pvs, vgs []string) {
	dev := "/dev/" + a.Device
	under := "PV " + strings.Join(pvs, ", ")
	if len(vgs) > 0 {
		under += " of VG " + strings.Join(vgs, ", ")
	}
	var faulty []string
	for _, m := range a.Members {
		if m.Faulty() {
			faulty = append(faulty, m.Device)
		}
	}
	if a.Syncing() {
		p.level("raid_sync", dev, 100*a.SyncRatio(), 0)
	} else if a.Degraded >= 0 {
		p.level("raid_sync", dev, 100, 0)
	}
	observed := fmt.Sprintf("array_state %s, degraded %d of %d", a.ArrayState, max(a.Degraded, 0), a.RaidDisks)
	if len(faulty) > 0 {
		observed += ", faulty " + strings.Join(faulty, ", ")
	}
	switch {
	case len(faulty) == 1:
		m := "/dev/" + faulty[0]
		// md.rst: a faulty member stays in the array until removed; mdadm
		// --add takes back a former member only by --re-add (a write-intent
		// bitmap), and otherwise refuses to make it a spare until its
		// superblock is zeroed. The recovery then copies it whole.
		p.add(Finding{ID: RAIDDegraded, Object: dev,
			Message: fmt.Sprintf("md array %s (%s, under %s) has failed member %s: its data rests on the other members; if the disk is sound, the remedy returns it and md recovers onto it; if it is dead, remove it (mdadm %s --remove %s) and add a new disk (mdadm %s --add DISK)",
				dev, a.Level, under, m, dev, m, dev),
			Expected: fmt.Sprintf("degraded 0 of %d, no faulty member", a.RaidDisks), Observed: observed,
			Remedy: shell.Join([]string{"mdadm", dev, "--remove", m}) + " && " + shell.Join([]string{"mdadm", "--zero-superblock", m}) +
				" && " + shell.Join([]string{"mdadm", dev, "--add", m})})
	case len(faulty) > 1 || a.Degraded > 0 || a.ArrayState == "broken":
		what := "lacks members"
		if a.Syncing() {
			what = fmt.Sprintf("lacks members while it runs %s onto a new one (%.2f%%)", a.SyncAction, 100*a.SyncRatio())
		}
		p.add(Finding{ID: RAIDDegraded, Object: dev,
			Message: fmt.Sprintf("md array %s (%s, under %s) %s: its data rests on the members left; add a disk for each one missing (mdadm %s --add DISK) unless a recovery already runs",
				dev, a.Level, under, what, dev),
			Expected: fmt.Sprintf("degraded 0 of %d, no faulty member", a.RaidDisks), Observed: observed})
	}
	if a.Syncing() {
		p.add(Finding{ID: RAIDResyncing, Object: dev,
			Message:  fmt.Sprintf("md array %s (under %s) runs %s: %.2f%% done", dev, under, a.SyncAction, 100*a.SyncRatio()),
			Expected: "sync_action idle", Observed: fmt.Sprintf("sync_action %s, sync_completed %d / %d", a.SyncAction, a.SyncDone, a.SyncTotal)})
	} else if a.MismatchCount > 0 {
		// md.rst: mismatch_cnt counts the sectors the last check or repair
		// found differing; writing "repair" to sync_action rewrites them.
		p.add(Finding{ID: RAIDMismatches, Object: dev,
			Message:  fmt.Sprintf("the last scrub of md array %s (under %s) found %d sectors whose copies differ; a repair rewrites them from one copy", dev, under, a.MismatchCount),
			Expected: "mismatch_cnt 0", Observed: fmt.Sprintf("mismatch_cnt %d", a.MismatchCount),
			Remedy: "echo repair > /sys/block/" + a.Device + "/md/sync_action"})
	}
}

// orWord is s, or alt when s is "".
func orWord(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// raidFaultPolicy reports activation/raid_fault_policy when it is not the
// declared one ("" not managed) and returns the finding's key ("" when it
// matches). lvmraid(7), "Automatic repair": when dmeventd sees a leg of a
// monitored RAID LV fail it runs lvconvert --repair --use-policies, which
// only logs with "warn" and replaces the leg with "allocate"; lvmconfig
// prints the value quoted, as lvm.conf states it.
func (p *planner) raidFaultPolicy(want string) string {
	if want == "" {
		return ""
	}
	got := p.h.LVMConfig.Values["activation/raid_fault_policy"]
	if got == strconv.Quote(want) {
		return ""
	}
	return p.add(Finding{ID: LVMRaidFaultPolicy, Object: LVMConfObject,
		Message:  "activation/raid_fault_policy is not the declared value: dmeventd acts on a failed RAID leg by it",
		Expected: "raid_fault_policy=" + strconv.Quote(want), Observed: "raid_fault_policy=" + got,
		Remedy: "set activation/raid_fault_policy in lvm.conf",
	})
}
