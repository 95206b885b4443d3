package probes

import (
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/keel-storage/keel/lvm"
	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/model"
)

// procDir is where the running processes are listed (proc(5)).
const procDir = "/proc"

// hasPvmove reports whether the LVM report holds a pvmove LV: lv_attr 'p'
// (lvm2 lib/report/report.c, _lvattr: PVMOVE), or the name lvm2 reserves
// for one (an orphan left by an unfinished clean-up).
func hasPvmove(h *model.Host) bool {
	for _, lv := range h.LVs {
		if strings.HasPrefix(lv.Attr, "p") || strings.HasPrefix(lv.Name, "pvmove") {
			return true
		}
	}
	return false
}

// readPollers lists, through fsys (so a snapshot records and replays them),
// the processes whose command line is one that polls a pvmove (isPoller).
// A process that ends while it is read is skipped.
func readPollers(fsys hostio.FS) ([]model.Process, error) {
	return readProcesses(fsys, isPoller)
}

// readProcesses lists, through fsys, the processes of /proc whose command
// line keep accepts, in the order /proc lists them. A process that ends
// while it is read, and a kernel thread (no command line), is skipped. A
// backgrounded poller's argv[0] is padded with NULs (lvm.Backgrounded):
// empty arguments are dropped.
func readProcesses(fsys hostio.FS, keep func(argv []string) bool) ([]model.Process, error) {
	ents, err := fsys.ReadDir(procDir)
	if err != nil {
		return nil, err
	}
	var out []model.Process
	for _, e := range ents {
		pid, err := strconv.Atoi(e)
		if err != nil || pid <= 0 {
			continue
		}
		b, err := fsys.ReadFile(procDir + "/" + e + "/cmdline")
		if err != nil || len(b) == 0 {
			continue
		}
		argv := slices.DeleteFunc(strings.Split(string(b), "\x00"), func(a string) bool { return a == "" })
		if len(argv) > 0 && keep(argv) {
			out = append(out, model.Process{PID: pid, Argv: argv})
		}
	}
	return out, nil
}

// isPoller reports whether argv is a command that polls a pvmove:
//   - pvmove, as its own program or as `lvm pvmove`: in the foreground it
//     polls the move it started or restarted until the copy ends, and
//     `pvmove -b` forks a child that polls it when lvmpolld is not used
//     (lvm2 tools/polldaemon.c, _poll_daemon), its argv[0] overwritten
//     with "(lvm2)" (lvm.Backgrounded);
//   - `lvm lvpoll --polloperation pvmove ... VG/LV`, the command lvmpolld
//     runs for every move it polls (lvm2 daemons/lvmpolld/lvmpolld-cmd-utils.c,
//     cmdargv_ctr; lvm-lvpoll(8)). lvmpolld itself polls only through them.
func isPoller(argv []string) bool {
	if len(argv) == 0 {
		return false
	}
	name, args := path.Base(argv[0]), argv[1:]
	if (name == "lvm" || lvm.Backgrounded(argv[0])) && len(args) > 0 && (args[0] == "pvmove" || args[0] == "lvpoll") {
		name, args = args[0], args[1:]
	}
	switch {
	case name == "pvmove", lvm.Backgrounded(name):
		// A backgrounded LVM command polls a pvmove, or another
		// operation keel cannot tell from it: counted, so that keel
		// never resumes a move something may poll.
		return true
	case name == "lvpoll":
		for i, a := range args {
			if (a == "--polloperation" && i+1 < len(args) && args[i+1] == "pvmove") || a == "--polloperation=pvmove" {
				return true
			}
		}
	}
	return false
}
