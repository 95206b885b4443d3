package plan

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/keel-storage/keel/probes/model"
)

// SuspendedLockDir is where LVM's file locks live (lvm2's default
// global/locking_dir): the executor takes a VG's lock file, V_<vg>, shared
// and without waiting before it resumes one of the VG's devices, and refuses
// while an LVM command holds it (lib/locking/file_locking.c): that command
// suspended the device and will resume it itself.
const SuspendedLockDir = "/run/lock/lvm"

// planSuspended handles the device-mapper devices the probe found stuck
// suspended (probes.Host.Suspended, probes/suspended.go). Every I/O to such
// a device waits, the VMs on it stall, and with scan_lvs = 1 every LVM
// command of the host waits on it too. A device LVM made (its dm uuid
// starts "LVM-") that stays suspended with no LVM command holding its VG was
// left so by an LVM command that was killed between its suspend and its
// resume (lvm2 suspends, commits, then resumes: lv_update_and_reload,
// lvrename). keel then drops any inactive table the command preloaded
// (dmsetup clear: it may map extents the command never committed), resumes
// the device on the table it ran with until the suspend (dmsetup resume),
// and, once every such device runs again (lvchange scans them all), reloads
// each visible LV from the committed metadata (lvchange --refresh), which
// also gives a device a rename left behind its LV's name its new one. One
// action does all of them. A device LVM did not make is reported: whoever
// suspended it may still need it so.
func (p *planner) planSuspended() {
	type stuck struct {
		name string
		lv   *model.LV
		f    Finding
	}
	var resume []stuck // LVM's devices, resumed by one action
	for _, name := range p.h.Suspended {
		kernel, q := p.dmQueue(name)
		uuid := ""
		if q != nil {
			uuid = q.DMUUID
		}
		lv := p.lvOfDMUUID(uuid)
		owner := "not a device LVM made"
		switch {
		case lv != nil:
			owner = "LV " + lv.FullName + "'s device"
		case strings.HasPrefix(uuid, "LVM-"):
			owner = "a device of LVM"
		}
		f := Finding{ID: DMSuspended, Object: name,
			Message: fmt.Sprintf("device-mapper device %s (%s) is suspended and stayed so through the probe's wait: every I/O to it waits, the VMs on it stall, and LVM commands that scan it (scan_lvs = 1) hang; keel changes nothing else until it runs again",
				name, owner),
			Expected: "not suspended", Observed: "suspended (/sys/block/" + cmp.Or(kernel, "dm-*") + "/dm/suspended = 1)"}
		switch vg := p.vgOfLV(lv); {
		case !strings.HasPrefix(uuid, "LVM-"):
			f.Remedy = "find who suspended it (dmsetup info " + name + "), then, once it may run again: dmsetup resume " + name
			p.reportOnly(DMSuspended, name, "a device LVM did not make is suspended: find who suspended it before resuming it", p.add(f))
		case vg != nil && vg.Shared:
			// lvmlockd, not the local lock files, locks a shared VG: the
			// executor could not tell an LVM command still at work.
			f.Remedy = "check that no LVM command runs on VG " + vg.Name + " (pgrep -a '^(lvm|lv[a-z]+|vg[a-z]+|pvmove|pvcreate|pvchange|pvresize|pvremove)$' prints nothing), then: dmsetup clear " + name + " && dmsetup resume " + name
			p.reportOnly(DMSuspended, name, "a device of a shared VG is suspended: keel cannot see whether an LVM command still holds it", p.add(f))
		default:
			resume = append(resume, stuck{name: name, lv: lv, f: f})
		}
	}
	if len(resume) == 0 {
		return
	}
	// Every device is resumed before any LV is refreshed: lvchange scans
	// the devices and would wait on one still suspended.
	var cmds, refresh [][]string
	var names, keys, refreshed []string
	for _, s := range resume {
		cmds = append(cmds, []string{"dmsetup", "clear", s.name}, []string{"dmsetup", "resume", s.name})
		names = append(names, s.name)
		if s.lv != nil && !s.lv.Hidden && !slices.Contains(refreshed, s.lv.FullName) {
			refresh = append(refresh, []string{"lvchange", "--refresh", s.lv.FullName})
			refreshed = append(refreshed, s.lv.FullName)
		}
	}
	cmds = append(cmds, refresh...)
	for _, s := range resume {
		s.f.Remedy = shellAnd(cmds)
		keys = append(keys, p.add(s.f))
	}
	what := "drop any preloaded table of " + strings.Join(names, ", ") + " and resume them on the tables they ran with"
	if len(refreshed) > 0 {
		what += ", then reload " + strings.Join(refreshed, ", ") + " from the committed metadata"
	}
	p.act(phaseLVMConf, Action{ID: "dm.suspended:" + strings.Join(names, ","), Kind: KindCommand, Class: Live,
		Object: strings.Join(names, ","), Summary: what, Commands: cmds, Remedies: keys})
}

// dmQueue returns the kernel name ("dm-3") and sysfs queue of the
// device-mapper device name, or "" and nil when sysfs did not list it.
func (p *planner) dmQueue(name string) (string, *model.Queue) {
	for k, q := range p.h.Queues {
		if q.DMName == name {
			return k, q
		}
	}
	return "", nil
}

// lvOfDMUUID returns the LV whose device a dm uuid names: LVM's are "LVM-",
// the VG's uuid and the LV's, without their dashes, then "-" and a layer
// for some devices ("-pool", "-vdata": build_dm_uuid in
// lib/misc/lvm-string.c).
func (p *planner) lvOfDMUUID(uuid string) *model.LV {
	const vgEnd = len("LVM-") + 32
	if !strings.HasPrefix(uuid, "LVM-") || len(uuid) < vgEnd+32 {
		return nil
	}
	for _, lv := range p.h.LVs {
		if strings.ReplaceAll(lv.UUID, "-", "") == uuid[vgEnd:vgEnd+32] {
			return lv
		}
	}
	return nil
}

// vgOfLV returns lv's VG as the probe saw it, or nil.
func (p *planner) vgOfLV(lv *model.LV) *model.VG {
	if lv == nil {
		return nil
	}
	return p.h.VGs[lv.VG]
}
