// Package bootunit is what keel-activate.service's process needs to know
// of its unit and of systemd: its own nice value, how to lower it for the
// wait on lvm2 and change that of its process group, and whether
// keel.service will start after it. keel activate and keel-boot share it.
package bootunit

import (
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"
)

// OwnNice returns the nice value keel was started with (0 when it cannot
// be read).
func OwnNice() int {
	// The raw system call returns 20 - nice (getpriority(2)).
	raw, err := unix.Getpriority(unix.PRIO_PROCESS, 0)
	if err != nil {
		return 0
	}
	return 20 - raw
}

// WaitNice lowers keel's CPU priority for its wait on lvm2's own
// activation to nice want (keel activate --wait-nice, which
// keel-activate.service passes) and returns the nice keel then runs at:
// want, or the nice it was started with when that is already as low. It
// changes the process group only when keel leads it, as the main process
// of a systemd service does, never a shell's or a script's.
//
// The unit passes the nice as a flag rather than Nice=: systemd
// dispatches the jobs ready at one moment by unit type, then CPU weight,
// then nice (src/core/unit.c, unit_compare_priority), so a unit with
// Nice=19 starts only after every other service ready with it.
func WaitNice(log hclog.Logger, want int) int {
	n := OwnNice()
	if want <= n {
		return n
	}
	if unix.Getpgrp() != os.Getpid() {
		log.Debug("not the leader of its process group; CPU priority left as it is", "nice", n)
		return n
	}
	SetGroupNice(log, want)
	return OwnNice()
}

// DaemonWillRun reports whether keel.service is enabled and not masked on
// the host under root: `systemctl enable` links it into
// multi-user.target.wants (its WantedBy=), `systemctl mask` links
// /etc/systemd/system/keel.service (or its /run twin) to /dev/null
// (systemctl(1)). Only then does keel.service's first pass follow
// keel-activate's READY, so that keel activate (and keel-boot) may leave the pass to it.
func DaemonWillRun(root string) bool {
	for _, p := range []string{"etc/systemd/system/keel.service", "run/systemd/system/keel.service"} {
		if t, err := os.Readlink(filepath.Join(root, p)); err == nil && t == "/dev/null" {
			return false
		}
	}
	_, err := os.Stat(filepath.Join(root, "etc/systemd/system/multi-user.target.wants/keel.service"))
	return err == nil
}

// SetGroupNice sets the nice value of keel's process group: every thread
// of keel (nice is per thread on Linux), and the commands it runs from now
// on. systemd makes a service's main process the leader of its own
// process group.
func SetGroupNice(log hclog.Logger, nice int) {
	if err := unix.Setpriority(unix.PRIO_PGRP, 0, nice); err != nil {
		log.Warn("setting the CPU priority", "nice", nice, "err", err)
		return
	}
	log.Debug("CPU priority set", "nice", nice)
}
