package vdo

import "testing"

var benchSink uint64

// BenchmarkSizing is what keel recommend and the planner compute per pool:
// the layout, the thick limit, the thread layout and the RAM bill.
func BenchmarkSizing(b *testing.B) {
	g := Geometry{PhysicalBytes: 40 << 30}
	for b.Loop() {
		l, err := NewLayout(g)
		if err != nil {
			b.Fatal(err)
		}
		t := AutoThreads(16, l.Slabs)
		r := RAMBill(g.PhysicalBytes, 35<<30, 128, 256)
		benchSink += l.Slabs + uint64(t.Total()) + r.TotalMiB()
	}
}

// BenchmarkLayout is NewLayout alone.
func BenchmarkLayout(b *testing.B) {
	g := Geometry{PhysicalBytes: 40 << 30}
	for b.Loop() {
		l, _ := NewLayout(g)
		benchSink += l.Slabs
	}
}

// BenchmarkMaxThick is the bisection for the largest thick logical size of a 1 TiB pool.
func BenchmarkMaxThick(b *testing.B) {
	l, err := NewLayout(Geometry{PhysicalBytes: 1 << 40})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		benchSink += l.MaxThickLogicalBlocks()
	}
}

// BenchmarkAutoThreads spreads 64 CPUs.
func BenchmarkAutoThreads(b *testing.B) {
	for b.Loop() {
		benchSink += uint64(AutoThreads(64, 100).Total())
	}
}
