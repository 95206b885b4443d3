//go:build e2e

package probes_e2e

import (
	"strconv"
	"strings"
	"testing"
)

// benchScript builds the split VDO pool plus a thin pool, then times, in
// turn and 5 times each, `lvm fullreport` with keel's argv and a whole
// `keel status` (process start, probe pass, JSON out). It prints
// "fullreport SECONDS" and "keel SECONDS" lines.
const benchScript = `set -uo pipefail
. /mnt/host/stacks.sh
nv=$(disk nvme0) hd=$(disk hdd1) || exit 2
stack_vdo_split "$nv" "$hd" >/dev/null || exit 1
lvcreate -y -q --type thin-pool -L 2G -n tp vdosplit "$nv" >/dev/null || exit 1
args='fullreport --reportformat json --units b --nosuffix --all --configreport vg -o vg_all --configreport pv -o pv_all,vg_name --configreport lv -o lv_all,vg_name --configreport seg -o seg_all,lv_uuid,lv_name,vg_name --configreport pvseg -o pvseg_all,pv_name,lv_uuid'
"$KEEL" status --format json >/dev/null || exit 1
for i in 1 2 3 4 5; do
	t0=$(date +%s.%N); LC_ALL=C LVM_SUPPRESS_FD_WARNINGS=1 lvm $args >/dev/null; t1=$(date +%s.%N)
	echo "fullreport $(awk -v a=$t0 -v b=$t1 'BEGIN{print b-a}')"
	t0=$(date +%s.%N); "$KEEL" status --format json >/dev/null; t1=$(date +%s.%N)
	echo "keel $(awk -v a=$t0 -v b=$t1 'BEGIN{print b-a}')"
done
exit 0
`

// BenchmarkProbePassGuest compares a whole keel probe pass with the one
// `lvm fullreport` it runs, on the real kernel in the TCG guest. It boots
// one guest per benchmark run and reports the medians as fullreport-s and
// keel-s, and their ratio (target: keel ≤ 1.25 × fullreport).
func BenchmarkProbePassGuest(b *testing.B) {
	for b.Loop() {
		r := runStacks(b, benchScript)
		times := map[string][]float64{}
		for _, line := range strings.Split(r.Output, "\n") {
			f := strings.Fields(line)
			if len(f) == 2 && (f[0] == "fullreport" || f[0] == "keel") {
				if v, err := strconv.ParseFloat(f[1], 64); err == nil {
					times[f[0]] = append(times[f[0]], v)
				}
			}
		}
		if len(times["fullreport"]) != 5 || len(times["keel"]) != 5 {
			b.Fatalf("timings missing: %v\n%s", times, r.Output)
		}
		fr, k := median(times["fullreport"]), median(times["keel"])
		b.ReportMetric(fr, "fullreport-s")
		b.ReportMetric(k, "keel-s")
		b.ReportMetric(k/fr, "keel/fullreport")
	}
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s[len(s)/2]
}
