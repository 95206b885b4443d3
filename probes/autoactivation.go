package probes

import (
	"path"
	"strconv"
	"strings"

	"github.com/keel-storage/keel/probes/hostio"
)

// Autoactivation is one process of lvm2's own event autoactivation: a
// `lvm vgchange -aay --autoactivation event VG`, the command udev's
// 69-dm-lvm.rules starts as the transient lvm-activate-<VG>.service for a
// VG whose PVs are all online (lvm2 2.03.14 and later; the guest's journal
// shows "[systemd-run] /usr/sbin/lvm vgchange -aay --autoactivation event
// vdovg"). While it runs it holds the VG's lock, so an LVM report of that
// VG waits for it. VG is "" when keel cannot tell (a vgchange of every
// VG).
type Autoactivation struct {
	PID int
	VG  string
}

// Autoactivations lists, through fsys, the processes of lvm2's own event
// autoactivation running now; a VG may be listed twice.
func Autoactivations(fsys hostio.FS) ([]Autoactivation, error) {
	procs, err := readProcesses(fsys, func(argv []string) bool {
		_, ok := autoactivatedVG(argv)
		return ok
	})
	if err != nil {
		return nil, err
	}
	var out []Autoactivation
	for _, p := range procs {
		vg, _ := autoactivatedVG(p.Argv)
		out = append(out, Autoactivation{PID: p.PID, VG: vg})
	}
	return out, nil
}

// Running reports whether process pid still runs, through fsys: its
// /proc/PID/cmdline reads, and is not empty (a process that has exited
// but is not yet reaped reads empty). Reading one file is far cheaper
// than Autoactivations, which reads every process's command line.
func Running(fsys hostio.FS, pid int) bool {
	b, err := fsys.ReadFile(procDir + "/" + strconv.Itoa(pid) + "/cmdline")
	return err == nil && len(b) > 0
}

// activationSlice is where systemd makes the cgroup of each system
// service under the unified cgroup hierarchy (cgroup v2, the default of
// systemd since v243 and of Debian, Proxmox VE and SUSE): udev's
// systemd-run puts lvm2's lvm-activate-<VG>.service there.
const activationSlice = "/sys/fs/cgroup/system.slice"

// ActivationUnit is one of lvm2's autoactivation units that has a cgroup.
type ActivationUnit struct {
	VG string
	// Procs is how many processes the unit's cgroup holds (its
	// cgroup.procs): none in the moment after systemd made the cgroup,
	// before it forked the unit's process into it, and none again once
	// that process has exited, before systemd removes the cgroup: the
	// kernel lists no exited process there, reaped or not
	// (kernel/cgroup/cgroup.c: cgroup_exit moves the task to the dying
	// tasks, and css_task_iter_advance skips a dying group leader with no
	// live thread); -1 when the file cannot be read.
	Procs int
	// Events is the host path of the cgroup's cgroup.events, which the
	// kernel marks modified each time the cgroup empties or fills.
	Events string
}

// ActivationUnits lists, through fsys, lvm2's autoactivation units that
// have a cgroup now: lvm-activate-<VG>.service, which 69-dm-lvm.rules
// starts with `systemd-run --unit lvm-activate-<VG>`. systemd makes a
// unit's cgroup before it forks the unit's process and removes it once
// the cgroup is empty (src/core/cgroup.c: unit_realize_cgroup,
// unit_prune_cgroup), so a unit shows here from the moment it is started,
// before its process has become vgchange (systemd-executor runs first, and
// /proc shows that command line until the exec), until it has stopped;
// its process count tells when vgchange itself has exited, a moment
// before systemd has noticed. An error means the unified hierarchy cannot
// be read; then only Autoactivations tells.
func ActivationUnits(fsys hostio.FS) ([]ActivationUnit, error) {
	names, err := fsys.ReadDir(activationSlice)
	if err != nil {
		return nil, err
	}
	var units []ActivationUnit
	for _, n := range names {
		if vg, ok := strings.CutPrefix(n, "lvm-activate-"); ok {
			if vg, ok = strings.CutSuffix(vg, ".service"); ok && vg != "" {
				u := ActivationUnit{VG: vg, Procs: -1, Events: activationSlice + "/" + n + "/cgroup.events"}
				if b, err := fsys.ReadFile(activationSlice + "/" + n + "/cgroup.procs"); err == nil {
					u.Procs = len(strings.Fields(string(b)))
				}
				units = append(units, u)
			}
		}
	}
	return units, nil
}

// ActivationWatchPaths are the directories whose entries change when
// lvm2's activation may have started or ended: the slice's (an
// activation unit's cgroup made or removed) and udev's run directory (its
// queue file made or removed). With each unit's Events, they are what a
// wait on lvm2 watches instead of looking on a timer.
func ActivationWatchPaths() []string { return []string{activationSlice, path.Dir(udevQueuePath)} }

// udevQueuePath exists while systemd-udevd has uevents queued or being
// processed: udevd creates it when an event is queued to an empty queue
// and removes it when the last event is done, its RUN programs included
// (systemd src/udev/udevd.c; libudev's udev_queue_get_queue_is_empty and
// `udevadm settle` read it).
const udevQueuePath = "/run/udev/queue"

// UdevBusy reports whether udev is still processing uevents (udevQueuePath),
// through fsys. A queue that cannot be read counts as idle.
func UdevBusy(fsys hostio.FS) bool {
	_, err := fsys.ReadFile(udevQueuePath)
	return err == nil
}

// autoactivatedVG reports whether argv is lvm2's event autoactivation
// (vgchange, as its own program or as `lvm vgchange`, with -aay and
// --autoactivation event) and of which VG: its one positional argument,
// "" when it names none or several.
func autoactivatedVG(argv []string) (string, bool) {
	if len(argv) == 0 {
		return "", false
	}
	name, args := path.Base(argv[0]), argv[1:]
	if name == "lvm" && len(args) > 0 {
		name, args = args[0], args[1:]
	}
	if name != "vgchange" {
		return "", false
	}
	event := false
	var positional []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--autoactivation" && i+1 < len(args):
			event = args[i+1] == "event"
			i++
		case a == "--autoactivation=event":
			event = true
		case len(a) > 0 && a[0] == '-':
			// -aay, -a ay, --activate ay: the value of a split flag is
			// not a VG.
			if (a == "-a" || a == "--activate") && i+1 < len(args) {
				i++
			}
		default:
			positional = append(positional, a)
		}
	}
	if !event {
		return "", false
	}
	if len(positional) != 1 {
		return "", true
	}
	return positional[0], true
}
