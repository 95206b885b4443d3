package hostio

import (
	"path"
	"slices"
	"strings"
	"time"
)

// Unbounded, as a Cmd's Timeout, runs the command to its end: no kill
// timeout, and the caller's context ending (a daemon pass preempted, the
// unit stopped) does not kill it either. A runner that keeps count of
// deadlines (the daemon's liveness) counts such a command as running with
// none.
const Unbounded time.Duration = -1

// Bound is keel's kill-timeout policy for a command it runs to change the
// host, in one place (docs/operations.md, "How long a command may run"):
// Unbounded for the LVM commands that can run long while LVM holds a
// device suspended or a copy half done, zero (the runner's own timeout) for
// every other. Killing LVM in the middle of a suspend leaves the device
// suspended and every I/O to it hung (the dm.suspended finding), and
// killing a copy leaves it for someone to resume:
//
//   - pvmove copies every extent through a temporary mirror and, in the
//     foreground, polls it until the copy ends (lvm2 tools/pvmove.c,
//     tools/polldaemon.c); its time grows with the data moved and the
//     speed of the slower PV.
//   - lvconvert formats a VDO pool (vdoformat), converts to thin pools,
//     and syncs mirrors and RAID images while LVs are suspended.
//   - lvextend and lvresize grow a VDO pool or volume: the VDO target takes
//     the new size when the pool is reloaded and resumed, and prepares the
//     added slabs before the resume returns (kernel
//     Documentation/admin-guide/device-mapper/vdo.rst, "Growing").
//   - vgchange and lvchange activating (-ay, -aay, --activate y) or
//     refreshing (--refresh) reload tables: a VDO pool replays its recovery
//     journal on its first activation after a power cut and a thin pool
//     runs thin_check, both as long as the metadata is large.
//
// Probes are never unbounded: they only read, and a read stuck on a dead
// device is killed and retried (Cmd.ReadOnly).
func Bound(argv []string) time.Duration {
	if len(argv) == 0 {
		return 0
	}
	name, args := path.Base(argv[0]), argv[1:]
	if name == "lvm" && len(args) > 0 {
		name, args = args[0], args[1:]
	}
	switch name {
	case "pvmove", "lvconvert", "lvextend", "lvresize":
		return Unbounded
	case "vgchange", "lvchange":
		if activates(args) || slices.Contains(args, "--refresh") {
			return Unbounded
		}
	}
	return 0
}

// activates reports whether the arguments of a vgchange or lvchange
// activate: -ay, -aay, -aey, -aly, or -a/--activate followed by one of
// y, ay, ey, ly (lvm2's activation_ARG values; "n" deactivates).
func activates(args []string) bool {
	on := func(v string) bool { return v == "y" || v == "ay" || v == "ey" || v == "ly" }
	for i, s := range args {
		switch {
		case (s == "-a" || s == "--activate") && i+1 < len(args):
			if on(args[i+1]) {
				return true
			}
		case strings.HasPrefix(s, "--activate="):
			if on(strings.TrimPrefix(s, "--activate=")) {
				return true
			}
		case strings.HasPrefix(s, "-a") && !strings.HasPrefix(s, "--"):
			if on(s[2:]) {
				return true
			}
		}
	}
	return false
}
