//go:build e2e

package guest

import (
	"regexp"
	"strconv"
	"testing"
)

var runningRE = regexp.MustCompile(`\[init ([0-9.]+)s\] running /mnt/host/run.sh`)

// BenchmarkBootFast measures one fast-flavour boot with an empty scenario:
// wall time per boot (lock wait included), and the guest's own uptime when
// the scenario starts (guest-s/op).
func BenchmarkBootFast(b *testing.B) {
	b.ReportAllocs()
	var guestSecs float64
	for i := 0; i < b.N; i++ {
		r := Run(b, Spec{Disks: []Disk{{Kind: NVMe, Size: "20G", Serial: "nvme0"},
			{Kind: HDD, Size: "40G", Serial: "hdd1"}}, Script: "true"})
		r.RequireOK(b)
		m := runningRE.FindStringSubmatch(r.Console)
		if m == nil {
			b.Fatalf("no run.sh start in the console:\n%s", tail(r.Console, 20))
		}
		s, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			b.Fatal(err)
		}
		guestSecs += s
	}
	b.ReportMetric(guestSecs/float64(b.N), "guest-s/op")
}
