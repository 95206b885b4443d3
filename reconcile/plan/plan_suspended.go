package plan

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

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
// command of the host waits on it too. Yet a suspend is not always an
// accident: a backup tool suspends an LV while the array snapshots it, an
// admin suspends one to swap its table during a recovery, and resuming it
// under them reverts their work while VMs write. So every such device is
// reported (critical), and keel resumes one only where the desired state
// opts in (agent.resumeSuspendedMinutes) and only when it is a device LVM
// made (its dm uuid starts "LVM-") in a VG that is not shared, on which no
// LVM or dmsetup command was seen for that many minutes (Memory.Suspended,
// recorded by the caller from SuspendedQuiet). Such a device was left so
// by an LVM command killed between its suspend and its resume (lvm2
// suspends, commits, then resumes: lv_update_and_reload, lvrename). keel
// then drops any inactive table the command preloaded (dmsetup clear: it
// may map extents the command never committed), resumes the device on the
// table it ran with until the suspend (dmsetup resume), and, once every
// such device runs again (lvchange scans them all), reloads each visible
// LV from the committed metadata (lvchange --refresh), which also gives a
// device a rename left behind its LV's name its new one. One action does
// all of them. Every other device is reported with the same commands as
// its remedy, for whoever knows the suspend is over.
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
		resumeCmds := [][]string{{"dmsetup", "clear", name}, {"dmsetup", "resume", name}}
		if lv != nil && !lv.Hidden {
			resumeCmds = append(resumeCmds, []string{"lvchange", "--refresh", lv.FullName})
		}
		vg := p.vgOfLV(lv)
		switch {
		case !strings.HasPrefix(uuid, "LVM-"):
			f.Remedy = "find who suspended it (dmsetup info " + name + "), then, once it may run again: dmsetup resume " + name
			p.reportOnly(DMSuspended, name, "a device LVM did not make is suspended: find who suspended it before resuming it", p.add(f))
		case vg != nil && vg.Shared:
			// lvmlockd, not the local lock files, locks a shared VG: the
			// executor could not tell an LVM command still at work.
			f.Remedy = "check that no LVM command runs on VG " + vg.Name + " (pgrep -a '^(lvm|lv[a-z]+|vg[a-z]+|pvmove|pvcreate|pvchange|pvresize|pvremove)$' prints nothing), then: dmsetup clear " + name + " && dmsetup resume " + name
			p.reportOnly(DMSuspended, name, "a device of a shared VG is suspended: keel cannot see whether an LVM command still holds it", p.add(f))
		default:
			if why := p.resumeWait(name, vg); why != "" {
				f.Message += "; keel does not resume it: " + why
				f.Remedy = shellAnd(resumeCmds)
				p.reportOnly(DMSuspended, name, "a device of LVM is suspended and keel does not resume it: "+why, p.add(f))
				continue
			}
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

// resumeWait says why keel does not resume the suspended device name of
// LVM in vg (nil when its LV is unknown), or "" when it may: the desired
// state opts in (agent.resumeSuspendedMinutes), no LVM or dmsetup command
// is on the VG now, and keel's record says none was seen for the minutes
// asked. A suspend by hand or by a backup tool lasts as long as its owner
// needs; LVM's own suspends last milliseconds to seconds.
func (p *planner) resumeWait(name string, vg *model.VG) string {
	minutes := 0
	if p.d != nil {
		minutes = p.d.Agent.ResumeSuspendedMinutes
	}
	if minutes == 0 {
		return "whoever suspended it (an admin, a backup tool's snapshot) may still need it so, and the desired state does not let keel resume it (agent.resumeSuspendedMinutes)"
	}
	vgName := ""
	if vg != nil {
		vgName = vg.Name
	}
	if cmds := commandsOnVG(p.h, vgName, name); len(cmds) > 0 {
		return "an LVM or dmsetup command runs on it (" + strings.Join(cmds, "; ") + ")"
	}
	rec, ok := p.mem.Suspended[name]
	wait := time.Duration(minutes) * time.Minute
	switch {
	case !ok || p.mem.Now.IsZero():
		return fmt.Sprintf("keel resumes it once no LVM or dmsetup command was seen on it for %d minutes, and has no record of how long it was quiet yet", minutes)
	case p.mem.Now.Sub(rec.QuietSince) < wait:
		return fmt.Sprintf("no LVM or dmsetup command seen on it since %s; keel resumes it at %s (agent.resumeSuspendedMinutes %d)",
			rec.QuietSince.UTC().Format(time.RFC3339), rec.QuietSince.Add(wait).UTC().Format(time.RFC3339), minutes)
	}
	return ""
}

// SuspendedQuiet maps every device h found stuck suspended to whether no
// LVM or dmsetup command runs on it: the caller records since when a
// device was quiet (state.State.SeeSuspended) and hands the records back
// as Memory.Suspended.
func SuspendedQuiet(h *model.Host) map[string]bool {
	if h == nil || len(h.Suspended) == 0 {
		return nil
	}
	p := newPlanner(h)
	quiet := make(map[string]bool, len(h.Suspended))
	for _, name := range h.Suspended {
		_, q := p.dmQueue(name)
		vg := ""
		if q != nil {
			if v := p.vgOfLV(p.lvOfDMUUID(q.DMUUID)); v != nil {
				vg = v.Name
			}
		}
		quiet[name] = len(commandsOnVG(h, vg, name)) == 0
	}
	return quiet
}

// commandsOnVG returns, as "PID args" lines, the LVM and dmsetup commands
// of h (model.Host.Commands) that may act on the device dm of VG vg (""
// when unknown): one naming the VG, one of its LVs or the device, and one
// naming no VG of the host at all (lvs, vgchange -ay and dmsetup ls act on
// every VG). One naming only other VGs does not count.
func commandsOnVG(h *model.Host, vg, dm string) []string {
	var out []string
	for _, c := range h.Commands {
		names, other := false, false
		for _, a := range c.Argv[1:] {
			switch n := argVG(h, a); {
			case a == dm || (vg != "" && n == vg):
				names = true
			case n != "":
				other = true
			}
		}
		if names || !other {
			out = append(out, fmt.Sprintf("%d %s", c.PID, strings.Join(c.Argv, " ")))
		}
	}
	return out
}

// argVG returns the VG of h an argument names ("vg", "vg/lv", "/dev/vg/lv",
// "/dev/mapper/<dm name of an LV>", or an LV's device-mapper name), or "".
func argVG(h *model.Host, a string) string {
	a = strings.TrimPrefix(a, "/dev/")
	if m, ok := strings.CutPrefix(a, "mapper/"); ok {
		a = m
	}
	if v, _, ok := strings.Cut(a, "/"); ok {
		a = v
	}
	if _, ok := h.VGs[a]; ok {
		return a
	}
	for _, lv := range h.LVs {
		if lv.DMName != "" && lv.DMName == a {
			return lv.VG
		}
	}
	return ""
}
