package lvm

import (
	"strings"
)

// PvmoveArgs reads what a pvmove command line moves: its source PV (the
// first positional argument, without its extent ranges) and the LV of -n
// (--name), made "vg/lv" with vg when given bare. ok is false for a
// command line that starts no move of its own: no source (pvmove alone
// restarts every interrupted move), --abort, or not pvmove at all. It
// reads pvmove as its own program, as `lvm pvmove`, and as the poller
// `pvmove -b` leaves (Backgrounded). The options that take a value are
// those of pvmove(8).
func PvmoveArgs(argv []string, vg string) (source, lv string, ok bool) {
	if len(argv) == 0 {
		return "", "", false
	}
	args := argv[1:]
	name := argv[0][strings.LastIndexByte(argv[0], '/')+1:]
	switch {
	case (name == "lvm" || Backgrounded(argv[0])) && len(args) > 0 && (args[0] == "pvmove" || args[0] == "lvpoll"):
		name, args = args[0], args[1:]
	case Backgrounded(argv[0]):
		name = "pvmove" // a background poller's arguments are at most pvmove's
	}
	if name != "pvmove" {
		return "", "", false
	}
	valued := map[string]bool{"-n": true, "--name": true, "-i": true, "--interval": true, "--alloc": true,
		"-A": true, "--autobackup": true, "--config": true, "--commandprofile": true, "--profile": true,
		"--reportformat": true, "--devices": true, "--devicesfile": true, "--journal": true, "--lockopt": true}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--abort":
			return "", "", false
		case a == "-n" || a == "--name":
			if i+1 < len(args) {
				lv = args[i+1]
			}
			i++
		case strings.HasPrefix(a, "--name="):
			lv = strings.TrimPrefix(a, "--name=")
		case valued[a]:
			i++
		case a == "" || strings.HasPrefix(a, "-"):
		case source == "":
			source, _, _ = strings.Cut(a, ":")
		}
	}
	if lv != "" && !strings.Contains(lv, "/") {
		lv = vg + "/" + lv
	}
	return source, lv, source != ""
}

// Backgrounded reports whether arg0, a process's argv[0], is that of the
// child an LVM command forks to poll in the background (pvmove -b, or any
// poll without lvmpolld): lvm2's become_daemon overwrites argv[0] with
// "(lvm2)", cut to the original's length and padded with NULs (strncpy in
// tools/toollib.c), so "pvmove" reads "(lvm2)" and "lvm" reads "(lv".
func Backgrounded(arg0 string) bool {
	return len(arg0) >= 3 && strings.HasPrefix("(lvm2)", arg0)
}
