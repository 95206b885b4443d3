//go:build e2e

package guest

import "slices"

// mutatingPrograms are the programs that change storage.
var mutatingPrograms = []string{"lvcreate", "lvchange", "lvconvert", "lvextend", "lvresize", "lvreduce", "lvremove",
	"lvrename", "pvcreate", "pvchange", "pvresize", "pvmove", "pvremove", "vgcreate", "vgchange", "vgextend", "vgreduce",
	"vgremove", "blkdiscard", "wipefs", "dd", "make-bcache", "dmsetup"}

// Mutating reports whether argv, one line of keel's command log
// (--command-log: one JSON argv per line), changes storage. dmsetup only
// reads with table, status, info, ls, and message … stats.
func Mutating(argv []string) bool {
	if len(argv) == 0 {
		return false
	}
	prog := argv[0]
	if prog == "lvm" && len(argv) > 1 {
		prog = argv[1]
	}
	if prog == "dmsetup" && len(argv) > 1 {
		switch argv[1] {
		case "table", "status", "info", "ls":
			return false
		case "message":
			return argv[len(argv)-1] != "stats"
		}
	}
	return slices.Contains(mutatingPrograms, prog)
}
