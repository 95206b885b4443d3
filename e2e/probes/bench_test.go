//go:build e2e

package probes_e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// benchScript builds the split VDO pool plus a thin pool, then times, in
// turn and 5 times each, `lvm fullreport` with keel's argv, a whole
// `keel status` (process start, probe pass, JSON out) and the probe pass
// alone as `keel snapshot -v` reports it. keel runs from the guest's RAM
// root, not from the 9p share (paging a static binary in over 9p under TCG
// costs seconds). It prints "fullreport S", "keel S" and "pass DURATION" lines.
const benchScript = `set -uo pipefail
. /mnt/host/stacks.sh
nv=$(disk nvme0) || exit 2
hd=$(disk hdd1) || exit 2
stack_vdo_split "$nv" "$hd" >/dev/null || exit 1
lvcreate -y -q --type thin-pool -L 2G -n tp vdosplit "$nv" >/dev/null || exit 1
cp "$KEEL" /tmp/keel && KEEL=/tmp/keel
"$KEEL" status --format json >/dev/null || exit 1
# keel's own report argv, from its snapshot (one JSON argv; arguments hold no '","')
"$KEEL" snapshot -o /tmp/node.txtar >/dev/null 2>&1 || exit 1
grep -m1 '^\["lvm","fullreport",' /tmp/node.txtar | sed -e 's/^\["//' -e 's/"\]$//' -e 's/","/\x1f/g' >/tmp/fr.argv
IFS=$'\x1f' read -r -a FR </tmp/fr.argv
[ "${FR[1]:-}" = fullreport ] || { echo "no lvm fullreport in keel's snapshot"; exit 1; }
for i in 1 2 3 4 5; do
	t0=$(date +%s.%N); LC_ALL=C LVM_SUPPRESS_FD_WARNINGS=1 "${FR[@]}" >/dev/null; t1=$(date +%s.%N)
	echo "fullreport $(awk -v a=$t0 -v b=$t1 'BEGIN{print b-a}')"
	t0=$(date +%s.%N); "$KEEL" status --format json >/dev/null; t1=$(date +%s.%N)
	echo "keel $(awk -v a=$t0 -v b=$t1 'BEGIN{print b-a}')"
	"$KEEL" snapshot -v -o /dev/null 2>&1 | awk '/probe pass/{print "pass", $5}'
done
exit 0
`

// BenchmarkProbePassGuest compares a whole keel probe pass with the one
// `lvm fullreport` it runs, on the real kernel in the TCG guest. It boots
// one guest per benchmark run and reports the medians as fullreport-s,
// keel-s (whole command) and pass-s (probe pass in-process), and the ratios
// to fullreport (target: ≤ 1.25).
func BenchmarkProbePassGuest(b *testing.B) {
	for b.Loop() {
		r := runStacks(b, benchScript, nil)
		times := map[string][]float64{}
		for _, line := range strings.Split(r.Output, "\n") {
			f := strings.Fields(line)
			if len(f) != 2 {
				continue
			}
			switch f[0] {
			case "fullreport", "keel":
				if v, err := strconv.ParseFloat(f[1], 64); err == nil {
					times[f[0]] = append(times[f[0]], v)
				}
			case "pass":
				if d, err := time.ParseDuration(f[1]); err == nil {
					times["pass"] = append(times["pass"], d.Seconds())
				}
			}
		}
		if len(times["fullreport"]) != 5 || len(times["keel"]) != 5 || len(times["pass"]) != 5 {
			b.Fatalf("timings missing: %v\n%s", times, r.Output)
		}
		fr, k, pass := median(times["fullreport"]), median(times["keel"]), median(times["pass"])
		b.ReportMetric(fr, "fullreport-s")
		b.ReportMetric(k, "keel-s")
		b.ReportMetric(pass, "pass-s")
		b.ReportMetric(k/fr, "keel/fullreport")
		b.ReportMetric(pass/fr, "pass/fullreport")
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
