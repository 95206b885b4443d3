package probes

import (
	"cmp"
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/keel-storage/keel/lvm"
	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/model"
)

// A device-mapper device left suspended (an LVM command killed between its
// suspend and its resume: lvm2 suspends an LV's devices, commits, then
// resumes them, as in lv_update_and_reload and lvrename) holds every I/O to
// it until something resumes it. LVM's scan then waits on it too: with
// devices/scan_lvs = 1, which keel sets for VGs stacked on LVs, LVs are
// scanned like disks, and lvm2's hints (/run/lvm/hints) stop sparing the
// non-PVs as soon as the list of devices changes, as an lvrename's does
// (lib/label/hints.c). One such device then hangs every LVM command of the
// host, keel's `lvm fullreport` among them, and a process blocked in that
// read cannot be killed until the device is resumed (it waits in exit_aio).
// devices/ignore_suspended_devices = 1 does not help: with lvm2 2.03.31
// `lvs` still hung on a suspended LV with it set in lvm.conf or by
// --config (docs/probes.md); `--devices` did not. So a pass first reads
// each device-mapper device's /sys/block/dm-N/dm/suspended
// (drivers/md/dm-sysfs.c): LVM's own suspends last from milliseconds to a
// few seconds, so a device still suspended after Source.SuspendWait is taken
// to be stuck, and the pass's LVM report then names the devices it may read
// (--devices): every block device but the stuck ones and those stacked on
// them (sysfs holders), whose reads would reach them. DirFS.ReadAt refuses
// suspended devices too.

// suspendPoll is how often a pass looks again at a suspended device.
const suspendPoll = 100 * time.Millisecond

// suspendedDM returns the device-mapper devices sysfs shows suspended, by
// kernel name ("dm-3") with their device-mapper names. A device whose
// attribute cannot be read (a snapshot recorded before keel read it) counts
// as not suspended.
func suspendedDM(fsys hostio.FS) map[string]string {
	devs, err := fsys.ReadDir(sysBlock)
	if err != nil {
		return nil
	}
	var out map[string]string
	for _, k := range devs {
		if !strings.HasPrefix(k, "dm-") || !dmSuspended(fsys, k) {
			continue
		}
		name, _ := readTrim(fsys, sysBlock+"/"+k+"/dm/name")
		if out == nil {
			out = map[string]string{}
		}
		out[k] = name
	}
	return out
}

// dmSuspended reads one device's suspended attribute.
func dmSuspended(fsys hostio.FS, kernel string) bool {
	s, err := readTrim(fsys, sysBlock+"/"+kernel+"/dm/suspended")
	return err == nil && s == "1"
}

// stuckSuspended returns the device-mapper devices that are suspended now
// and still are after wait, looking again every suspendPoll, by kernel name
// with their device-mapper names; nil when none is (the usual case costs one
// read per device-mapper device).
func stuckSuspended(ctx context.Context, fsys hostio.FS, wait time.Duration) map[string]string {
	susp := suspendedDM(fsys)
	for deadline := time.Now().Add(wait); len(susp) > 0 && time.Now().Before(deadline); {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(suspendPoll):
		}
		for k := range susp {
			if !dmSuspended(fsys, k) {
				delete(susp, k)
			}
		}
	}
	if len(susp) == 0 {
		return nil
	}
	return susp
}

// suspendedNames returns the device-mapper names of stuck, sorted (a
// device's kernel name when it has none).
func suspendedNames(stuck map[string]string) []string {
	names := make([]string, 0, len(stuck))
	for k, n := range stuck {
		names = append(names, cmp.Or(n, k))
	}
	slices.Sort(names)
	return names
}

// readableDevices lists, as /dev/<kernel name>, sorted, every block device
// of /sys/class/block (disks, partitions, device-mapper devices) but the
// stuck ones and, through sysfs's holders links, every device stacked on
// them: the devices an LVM command may read without waiting.
func readableDevices(fsys hostio.FS, stuck map[string]string) ([]string, error) {
	all, err := fsys.ReadDir(sysClassBlock)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", sysClassBlock, err)
	}
	skip := map[string]bool{}
	var walk func(k string, depth int)
	walk = func(k string, depth int) {
		if skip[k] || depth > 32 {
			return
		}
		skip[k] = true
		holders, _ := fsys.ReadDir(sysBlock + "/" + k + "/holders")
		for _, h := range holders {
			walk(h, depth+1)
		}
	}
	for k := range stuck {
		walk(k, 0)
	}
	var out []string
	for _, k := range all {
		if !skip[k] {
			out = append(out, "/dev/"+k)
		}
	}
	slices.Sort(out)
	return out, nil
}

// withDevices returns c limited to devs (`--devices`, lvm2 2.03.12 and
// later: "Devices not listed will appear to be missing"), the option before
// any "--".
func withDevices(c hostio.Cmd, devs []string) hostio.Cmd {
	args := slices.Clone(c.Args)
	at := slices.Index(args, "--")
	if at < 0 {
		at = len(args)
	}
	args = slices.Insert(args, at, "--devices", strings.Join(devs, ","))
	c.Args = args
	return c
}

// lvmCommands lists the LVM and dmsetup processes running now
// (isLVMCommand), from /proc/PID/cmdline through the probe's file root (so
// a snapshot records and replays them), sorted by PID. A process that
// exits between the listing and the read is skipped.
func lvmCommands(fsys hostio.FS) []model.Process {
	out, _ := readProcesses(fsys, func(argv []string) bool { return isLVMCommand(argv[0]) })
	slices.SortFunc(out, func(a, b model.Process) int { return a.PID - b.PID })
	return out
}

// lvmDaemons are lvm2's daemons: they hold no VG lock of their own.
var lvmDaemons = map[string]bool{"lvmpolld": true, "lvmlockd": true, "lvmdbusd": true, "lvmetad": true, "dmeventd": true}

// isLVMCommand reports whether argv0 runs an LVM command or dmsetup: lvm,
// its links named lv*, vg* and pv* (lvm2's tools/commands), the child an
// LVM command forks to poll in the background (lvm.Backgrounded), and
// dmsetup. LVM's daemons lvmpolld, lvmlockd and dmeventd run no command of
// their own (lvmpolld's polling runs as "lvm lvpoll"), and Proxmox VE's
// daemons (pvestatd, pveproxy, …) share the "pv" prefix and are not LVM's.
func isLVMCommand(argv0 string) bool {
	if lvm.Backgrounded(argv0) {
		return true
	}
	name := path.Base(argv0)
	switch {
	case lvmDaemons[name] || strings.HasPrefix(name, "pve"):
		return false
	case name == "lvm" || name == "dmsetup":
		return true
	}
	for _, pre := range []string{"lv", "vg", "pv"} {
		if rest, ok := strings.CutPrefix(name, pre); ok && rest != "" && strings.Trim(rest, "abcdefghijklmnopqrstuvwxyz") == "" {
			return true
		}
	}
	return false
}
