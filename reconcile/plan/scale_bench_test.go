package plan

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/keel-storage/keel/probes"
	"github.com/keel-storage/keel/probes/hostio"
)

// scaleHosts caches the synthetic hosts of BenchmarkScale: building one of
// 50,000 LVs costs seconds, and the testing package calls a sub-benchmark's
// function several times while it sizes b.N.
var scaleHosts sync.Map // int -> synthHost

func scaleHost(b *testing.B, lvs int) synthHost {
	if v, ok := scaleHosts.Load(lvs); ok {
		return v.(synthHost)
	}
	sh := makeSynthHost(b, lvs)
	scaleHosts.Store(lvs, sh)
	return sh
}

// BenchmarkScale is the scale figure of `make bench`: parsing the replayed
// probe pass plus planning (probeplan), and planning alone (plan), over a
// host of 1,000, 10,000 and 50,000 LVs with 64 VDO pools and 64 bcache
// devices. e2e/bench derives the per-LV slope and the 50k/1k ratio from it
// (linear growth gives 50).
func BenchmarkScale(b *testing.B) {
	for _, n := range []int{1000, 10000, 50000} {
		for _, probe := range []bool{true, false} {
			name := "plan"
			if probe {
				name = "probeplan"
			}
			b.Run(fmt.Sprintf("%s/lvs=%d", name, n), func(b *testing.B) {
				sh := scaleHost(b, n)
				h, err := probes.Probe(context.Background(), hostio.Replay(sh.snap))
				if err != nil {
					b.Fatalf("synthetic host of %d lvs: %v", n, err)
				}
				if len(h.LVs) != n {
					b.Fatalf("synthetic host: %d lvs, want %d", len(h.LVs), n)
				}
				b.ReportAllocs()
				for b.Loop() {
					obs := h
					if probe {
						if obs, err = probes.Probe(context.Background(), hostio.Replay(sh.snap)); err != nil {
							b.Fatal(err)
						}
					}
					if r := Plan(sh.desired, obs); len(r.Findings) == 0 {
						b.Fatal("no findings on the synthetic host")
					}
				}
			})
		}
	}
}
