package activation

import "testing"

// BenchmarkCompute: the activation plan of the VDO-on-bcache guest snapshot
// (two VGs, one stacked), what keel activate computes after every probe.
func BenchmarkCompute(b *testing.B) {
	h, _ := probeNode(b, bcacheNode)
	cfg := stack()
	b.ReportAllocs()
	for b.Loop() {
		if p, err := Compute(cfg, h); err != nil || !p.Done() {
			b.Fatal(err)
		}
	}
}

// BenchmarkRules: both udev rules files for the same node.
func BenchmarkRules(b *testing.B) {
	h, _ := probeNode(b, bcacheNode)
	cfg := stack()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Rules(cfg, h, nil); err != nil {
			b.Fatal(err)
		}
	}
}
