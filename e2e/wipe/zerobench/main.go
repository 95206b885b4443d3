// Command zerobench clears a block device with keel's stepping engine
// (reconcile/apply/wipe) and prints the bytes and the seconds spent inside the
// engine (wipe.Wipe alone, without process start, the sysfs reads and the
// exclusive open). It exists for e2e/bench-wipe.sh, which compares it with
// blkdiscard and dd on a loop device; keel itself never takes a raw device
// path.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/keel-storage/keel/lvm/units"
	"github.com/keel-storage/keel/reconcile/apply/wipe"
	"github.com/keel-storage/keel/reconcile/plan/removal"
)

func main() {
	step := flag.String("step", "32M", "wanted step (capped by write_zeroes_max_bytes for zeroout)")
	mode := flag.String("mode", "zeroout", "zeroout or discard")
	length := flag.String("length", "", "clear only the first `SIZE` bytes (as blkdiscard --length); default the whole device")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: zerobench [-step 32M] [-mode zeroout|discard] [-length SIZE] /dev/BLOCKDEV")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *step, *length, removal.Mode(*mode)); err != nil {
		fmt.Fprintln(os.Stderr, "zerobench:", err)
		os.Exit(1)
	}
}

// prefix is a device cut to its first n bytes, for -length.
type prefix struct {
	wipe.Device
	n uint64
}

// Size is the smaller of the device's size and n.
func (p prefix) Size() (uint64, error) {
	s, err := p.Device.Size()
	return min(s, p.n), err
}

func run(dev, stepStr, lengthStr string, mode removal.Mode) error {
	want, err := units.ParseSize(stepStr)
	if err != nil {
		return fmt.Errorf("step %q: %w", stepStr, err)
	}
	var length uint64
	if lengthStr != "" {
		if length, err = units.ParseSize(lengthStr); err != nil {
			return fmt.Errorf("length %q: %w", lengthStr, err)
		}
	}
	ql, err := wipe.ReadQueueLimits("/sys", dev)
	if err != nil {
		return err
	}
	step, notes, err := wipe.StepFor(mode, want, ql)
	if err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintln(os.Stderr, "note:", n)
	}
	d, err := wipe.OpenBlock(dev)
	if err != nil {
		return err
	}
	defer d.Close()
	var target wipe.Device = d
	if length > 0 {
		target = prefix{d, length}
	}
	var p wipe.Progress
	start := time.Now()
	if err := wipe.Wipe(context.Background(), dev, target, mode, step, &p); err != nil {
		return err
	}
	fmt.Printf("%d bytes %.6f s step %d\n", p.Stat().Done, time.Since(start).Seconds(), step)
	return nil
}
