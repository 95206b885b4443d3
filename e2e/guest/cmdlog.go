//go:build e2e

package guest

import (
	"path"
	"slices"
	"strings"
)

// mutatingPrograms are the programs that change storage. pvscan records
// which PVs are online and with -aay activates their LVs (pvscan(8)).
var mutatingPrograms = []string{"lvcreate", "lvchange", "lvconvert", "lvextend", "lvresize", "lvreduce", "lvremove",
	"lvrename", "pvcreate", "pvchange", "pvresize", "pvmove", "pvremove", "pvscan", "vgcreate", "vgchange", "vgextend",
	"vgreduce", "vgremove", "blkdiscard", "wipefs", "dd", "make-bcache", "dmsetup", "udevadm"}

// Mutating reports whether argv, one line of keel's command log
// (--command-log: one JSON argv per line), changes storage. A program is
// judged by its base name (/usr/sbin/lvcreate is lvcreate), after an env(1)
// prefix of NAME=VALUE assignments. dmsetup only reads with table, status,
// info, ls, and message … stats; udevadm only with info, settle, monitor,
// cat, verify and wait (udevadm(8)): trigger and control --reload change
// what the next events do.
func Mutating(argv []string) bool {
	if len(argv) > 0 && path.Base(argv[0]) == "env" {
		argv = argv[1:]
		for len(argv) > 0 && strings.Contains(argv[0], "=") {
			argv = argv[1:]
		}
	}
	if len(argv) == 0 {
		return false
	}
	prog := path.Base(argv[0])
	if prog == "lvm" && len(argv) > 1 {
		prog = argv[1]
		argv = argv[1:]
	}
	if len(argv) > 1 {
		switch prog {
		case "dmsetup":
			switch argv[1] {
			case "table", "status", "info", "ls":
				return false
			case "message":
				return argv[len(argv)-1] != "stats"
			}
		case "udevadm":
			switch argv[1] {
			case "info", "settle", "monitor", "cat", "verify", "wait":
				return false
			}
		}
	}
	return slices.Contains(mutatingPrograms, prog)
}
