package wipe

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/keel-storage/keel/reconcile/plan/removal"
)

// QueueLimits are the block-queue limits that shape a wipe, read from
// /sys/class/block/<dev>/queue.
type QueueLimits struct {
	Dev            string // kernel name, e.g. dm-3 or loop0
	WriteZeroesMax uint64 // write_zeroes_max_bytes; 0 means no WRITE ZEROES offload
	DiscardMax     uint64 // discard_max_bytes; 0 means no discard
}

// ReadQueueLimits resolves devPath (e.g. /dev/vg/lv, a symlink to
// /dev/dm-N) to its kernel name and reads its queue limits under sysRoot
// (normally "/sys").
func ReadQueueLimits(sysRoot, devPath string) (QueueLimits, error) {
	real, err := filepath.EvalSymlinks(devPath)
	if err != nil {
		return QueueLimits{}, fmt.Errorf("device %s: %w", devPath, err)
	}
	ql := QueueLimits{Dev: filepath.Base(real)}
	dir := filepath.Join(sysRoot, "class", "block", ql.Dev, "queue")
	if _, err := os.Stat(dir); err != nil {
		// A partition has no queue of its own; its disk's applies.
		dir = filepath.Join(sysRoot, "class", "block", ql.Dev, "..", "queue")
	}
	for _, f := range []struct {
		name string
		dst  *uint64
	}{
		{"write_zeroes_max_bytes", &ql.WriteZeroesMax},
		{"discard_max_bytes", &ql.DiscardMax},
	} {
		b, err := os.ReadFile(filepath.Join(dir, f.name))
		if err != nil {
			return ql, fmt.Errorf("device %s (%s): %w", devPath, ql.Dev, err)
		}
		v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return ql, fmt.Errorf("device %s (%s): %s: %w", devPath, ql.Dev, f.name, err)
		}
		*f.dst = v
	}
	return ql, nil
}

// vdoBlock is VDO's block size; a discard limit this small means the VDO
// pool below has max_discard 1, the default.
const vdoBlock = 4096

// StepFor picks the step for mode from the wanted step and the device's
// limits, and says why when it differs from what was asked or when the wipe
// will be slow. For zeroout the step is capped at write_zeroes_max_bytes when
// that is non-zero; when it is 0 the kernel falls back to writing zero pages,
// which still clears the device, only more slowly. Discard fails when the
// device has no discard at all.
func StepFor(mode removal.Mode, want uint64, ql QueueLimits) (step uint64, notes []string, err error) {
	if want == 0 {
		want = DefaultStep
	}
	step = want - want%sectorSize
	if step == 0 {
		return 0, nil, fmt.Errorf("step %d: %w", want, ErrBadStep)
	}
	switch mode {
	case removal.ModeZeroOut:
		if ql.WriteZeroesMax == 0 {
			notes = append(notes, fmt.Sprintf("%s has no WRITE ZEROES offload (write_zeroes_max_bytes 0): the kernel writes zero pages instead, which works but is slower", ql.Dev))
		} else if step > ql.WriteZeroesMax {
			step = ql.WriteZeroesMax - ql.WriteZeroesMax%sectorSize
			notes = append(notes, fmt.Sprintf("step reduced to write_zeroes_max_bytes of %s: %d bytes", ql.Dev, step))
		}
	case removal.ModeDiscard:
		if ql.DiscardMax == 0 {
			return 0, nil, fmt.Errorf("%s does not support discard (discard_max_bytes 0)", ql.Dev)
		}
		if ql.DiscardMax <= vdoBlock {
			notes = append(notes, fmt.Sprintf("%s discards at most %d bytes per request: a VDO pool below with max_discard 1 makes this slow; set maxDiscard (e.g. 16M) on the pool", ql.Dev, ql.DiscardMax))
		}
	default:
		return 0, nil, fmt.Errorf("unknown mode %q", mode)
	}
	if step == 0 {
		return 0, nil, fmt.Errorf("%s: step %d: %w", ql.Dev, step, ErrBadStep)
	}
	return step, notes, nil
}
