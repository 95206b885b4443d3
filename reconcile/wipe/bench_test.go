package wipe

import (
	"context"
	"fmt"
	"os"
	"testing"
)

// nullDevice does nothing, so BenchmarkStepLoop measures the engine's own
// cost per step (context check, bounds, progress counters).
type nullDevice struct{ size uint64 }

func (d nullDevice) Size() (uint64, error)     { return d.size, nil }
func (nullDevice) ZeroOut(off, n uint64) error { return nil }
func (nullDevice) Discard(off, n uint64) error { return nil }

// BenchmarkStepLoop reports the engine's overhead per step: one op is one
// 32 MiB step of a 100 GiB device with a device that does no I/O.
func BenchmarkStepLoop(b *testing.B) {
	const size = 100 << 30
	steps := size / DefaultStep
	var p Progress
	b.ReportAllocs()
	for b.Loop() {
		if err := Wipe(context.Background(), "null", nullDevice{size}, ModeZeroOut, DefaultStep, &p); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*steps), "ns/step")
}

// BenchmarkLoopZeroOut zeroes a 1 GiB loop device with the real BLKZEROOUT
// ioctl at several steps (root only; KEEL_SKIP_ROOT_TESTS=1 skips it).
func BenchmarkLoopZeroOut(b *testing.B) {
	if os.Getenv("KEEL_SKIP_ROOT_TESTS") == "1" {
		b.Skip("KEEL_SKIP_ROOT_TESTS=1: root-only loop-device benchmark skipped")
	}
	if os.Geteuid() != 0 {
		b.Fatal("this benchmark needs root (loop devices); run as root or set KEEL_SKIP_ROOT_TESTS=1")
	}
	for _, step := range []uint64{1 << 20, 8 << 20, 32 << 20, 128 << 20} {
		b.Run(fmt.Sprintf("step=%dM", step>>20), func(b *testing.B) {
			dev := loopDevice(b, 1<<30, false)
			d, err := OpenBlock(dev)
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			b.SetBytes(1 << 30)
			for b.Loop() {
				if err := Wipe(context.Background(), dev, d, ModeZeroOut, step, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
