package hostio

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/keel-storage/keel/probes/internal/dmioctl"
)

// The device-mapper reads of a probe pass (`dmsetup table`, `dmsetup
// status`, `dmsetup message <dev> 0 stats`) cost one process start each,
// which under emulation is most of their time. DMRunner answers them from
// the device-mapper ioctls (probes/internal/dmioctl) instead, byte for byte
// as dmsetup prints them, so recorded snapshots and their replay do not
// depend on which way a command was served.

// dmServed says which command forms DMRunner answers in-process, and how:
// "table", "status", or "message" with the device name.
func dmServed(c Cmd) (kind, dev string, ok bool) {
	if c.Name != "dmsetup" {
		return "", "", false
	}
	switch {
	case len(c.Args) == 1 && (c.Args[0] == "table" || c.Args[0] == "status"):
		return c.Args[0], "", true
	case len(c.Args) == 4 && c.Args[0] == "message" && c.Args[2] == "0" && c.Args[3] == "stats":
		return "message", c.Args[1], true
	}
	return "", "", false
}

// fallbackCmd is the dmsetup command run when the ioctls fail: c itself,
// but a status read gets --noflush, the flag the ioctl path sets (dmsetup(8):
// "do not commit thin-pool metadata before reporting statistics"), so the
// fallback reads without writing too. The output is the same; the command
// is recorded and replayed under c's name, as the ioctl path's is.
func fallbackCmd(c Cmd, kind string) Cmd {
	if kind != "status" {
		return c
	}
	c.Args = append(slices.Clone(c.Args), "--noflush")
	return c
}

// errIoctlOff is the fallback reason when DMRunner.NoIoctl is set.
var errIoctlOff = errors.New("dm ioctls turned off (KEEL_DM_IOCTL=off)")

// DMRunner answers `dmsetup table`, `dmsetup status` and `dmsetup message
// <dev> 0 stats` with device-mapper ioctls and passes every other command
// to Exec. When an ioctl path fails (no control node, no permission, a
// reply it cannot read) it runs the real dmsetup through Exec instead and
// logs why at debug level. Its output is byte-identical to dmsetup's
// (proved on the real kernel by e2e/probes), so a probe pass recorded
// through it replays the same everywhere. It is safe for concurrent use.
type DMRunner struct {
	// Exec runs every command DMRunner does not serve, and the fallbacks.
	Exec Runner
	// Control is the control node; empty means /dev/mapper/control.
	Control string
	// Log receives one debug line per served or fallen-back command; nil
	// means no logging.
	Log hclog.Logger
	// NoIoctl runs dmsetup for every read (KEEL_DM_IOCTL=off), with the
	// same --noflush the fallback adds.
	NoIoctl bool

	mu    sync.Mutex
	stats DMRunnerStats
}

// DMRunnerStats counts how DMRunner served the dmsetup commands it knows.
type DMRunnerStats struct {
	// Ioctl is the number served in-process.
	Ioctl int
	// Exec is the number that fell back to running dmsetup.
	Exec int
	// LastFallback is the error that caused the latest fallback.
	LastFallback string
}

// Stats returns the counts so far.
func (r *DMRunner) Stats() DMRunnerStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

// Run serves c in-process when it is one of the dmsetup reads and the
// ioctls work, and otherwise runs it through Exec.
func (r *DMRunner) Run(ctx context.Context, c Cmd) (Result, error) {
	kind, dev, ok := dmServed(c)
	if !ok {
		return r.Exec.Run(ctx, c)
	}
	if err := ctx.Err(); err != nil {
		return Result{ExitCode: -1}, fmt.Errorf("%s: %w", c, err)
	}
	control := r.Control
	if control == "" {
		control = dmioctl.Control
	}
	var out []byte
	var err error
	if r.NoIoctl {
		err = errIoctlOff
	} else {
		out, err = dmioctl.Read(control, kind, dev)
	}
	r.mu.Lock()
	if err != nil {
		r.stats.Exec++
		r.stats.LastFallback = err.Error()
	} else {
		r.stats.Ioctl++
	}
	r.mu.Unlock()
	if err != nil {
		if r.Log != nil {
			r.Log.Debug("dm ioctl failed, running dmsetup", "cmd", c.String(), "error", err)
		}
		return r.Exec.Run(ctx, fallbackCmd(c, kind))
	}
	if r.Log != nil {
		r.Log.Debug("served by dm ioctl", "cmd", c.String(), "bytes", len(out))
	}
	c.ConsumeWhole(out)
	return Result{Stdout: out}, nil
}
