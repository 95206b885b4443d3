package wipe

import (
	"context"
	"testing"

	"github.com/keel-storage/keel/reconcile/plan/removal"
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
		if err := Wipe(context.Background(), "null", nullDevice{size}, removal.ModeZeroOut, DefaultStep, &p); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*steps), "ns/step")
}
