package probes

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/keel-storage/keel/probes/hostio"
	"github.com/keel-storage/keel/probes/model"
)

// lvmlockctlInfoCmd asks lvmlockd which lockspaces it holds. lvmlockctl
// --info only reads: it sends lvmlockd an "info" request and prints the
// state dumped back (lvm2 daemons/lvmlockd/lvmlockctl.c, do_dump and
// format_info), one "VG <name> lock_type=<type> <uuid>" line per
// lockspace, followed by its "LS", "LK" and "OP" lines.
var lvmlockctlInfoCmd = hostio.Cmd{Name: "lvmlockctl", Args: []string{"--info"}, ReadOnly: true, Timeout: 10 * time.Second}

// lvmlockdDown is what lvmlockctl prints when it cannot reach lvmlockd's
// socket (lvmlockctl.c, main), on standard output (its log_error is a
// printf), exiting non-zero: lvmlockd is not running.
const lvmlockdDown = "Cannot connect to lvmlockd"

// probeLvmlockd reads lvmlockd's lockspaces into h.Lvmlockd, through the
// pass's Runner so that a node snapshot records it, when a VG has an
// lvmlockd lock type; otherwise lvmlockd has nothing of keel's to say and
// is not asked.
func probeLvmlockd(ctx context.Context, src hostio.Source, h *model.Host) {
	if !slices.ContainsFunc(slices.Collect(maps.Values(h.VGs)), (*model.VG).Lockd) {
		return
	}
	res, err := runResult(ctx, src, lvmlockctlInfoCmd)
	switch {
	case err != nil && strings.Contains(string(res.Stdout), lvmlockdDown):
		h.Lvmlockd = &model.Lvmlockd{}
	case err != nil:
		h.Lvmlockd = &model.Lvmlockd{Error: err.Error()}
	default:
		h.Lvmlockd = parseLvmlockctlInfo(res.Stdout)
	}
}

// parseLvmlockctlInfo reads the VG lines of lvmlockctl --info. lvmlockd's
// dlm global lockspace has no VG of its own and prints none.
func parseLvmlockctlInfo(out []byte) *model.Lvmlockd {
	l := &model.Lvmlockd{Running: true}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == "VG" && strings.HasPrefix(f[2], "lock_type=") && !slices.Contains(l.Started, f[1]) {
			l.Started = append(l.Started, f[1])
		}
	}
	slices.Sort(l.Started)
	return l
}
