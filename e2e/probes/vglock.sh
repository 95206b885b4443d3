#!/usr/bin/env bash
# Scenario script for e2e/vm-run.sh: what /proc shows of LVM's VG lock while
# lvm2's event activation holds it and an `lvm fullreport` waits for it,
# and when such a queued report ends against one started after the
# activation, outside a boot (docs/benchmark-history.md: keel's report
# queued behind lvm2's lock, tried and not kept).
#   e2e/vm-run.sh --share DIR --nvme 4G e2e/probes/vglock.sh
# The figures are in DIR/guest.log; DIR/out/vglock/held holds /proc/PID/fd,
# fdinfo and /proc/locks of both processes.
set -uo pipefail
fail=0
versions
d=$(disk nvme0)
pvcreate -q -y "$d" && vgcreate -q lockvg "$d" || exit 1
for i in $(seq 1 48); do lvcreate -q -an -y -L 8M -n vm-$i-disk-0 lockvg >/dev/null || exit 1; done
vgchange -an lockvg >/dev/null
snap() { # snap DIR PID...
	local dir=$1 pid f n; shift
	for pid; do
		mkdir -p "$dir/proc/$pid/fd" "$dir/proc/$pid/fdinfo"
		cp /proc/$pid/cmdline "$dir/proc/$pid/cmdline"
		for f in /proc/$pid/fd/*; do
			n=${f##*/}
			ln -s "$(readlink "$f")" "$dir/proc/$pid/fd/$n" 2>/dev/null
			cat /proc/$pid/fdinfo/$n >"$dir/proc/$pid/fdinfo/$n" 2>/dev/null
		done
	done
	cat /proc/locks >"$dir/locks.txt"
}
for round in 1 2 3; do
	vgchange -an lockvg >/dev/null
	sync; echo 3 >/proc/sys/vm/drop_caches
	t0=$(date +%s.%N)
	lvm vgchange -aay --autoactivation event lockvg >/tmp/vgc.out 2>&1 &
	vpid=$!
	held=
	for i in $(seq 1 4000); do
		for f in /proc/$vpid/fd/*; do
			if [ "$(readlink "$f" 2>/dev/null)" = /run/lock/lvm/V_lockvg ] && grep -q 'FLOCK.*WRITE' /proc/$vpid/fdinfo/${f##*/} 2>/dev/null; then
				held=$(date +%s.%N); break 2
			fi
		done
		sleep 0.005
	done
	[ -n "$held" ] || { echo "FAIL: round $round: lock never seen held"; fail=1; continue; }
	lvm fullreport --reportformat json -o lv_name,lv_active >/tmp/rep.json 2>/tmp/rep.err &
	rpid=$!
	sleep 0.8
	[ $round = 1 ] && snap "$OUT/vglock/held" $vpid $rpid
	wait $vpid; vend=$(date +%s.%N)
	wait $rpid; rend=$(date +%s.%N)
	active=$(grep -o '"lv_active":"active"' /tmp/rep.json | wc -l)
	[ "$active" = 48 ] || { echo "FAIL: round $round: $active of 48 LVs active in the queued report"; fail=1; }
	echo "round $round: lock seen held at $(awk "BEGIN{printf \"%.3f\", $held - $t0}") s, vgchange ended $(awk "BEGIN{printf \"%.3f\", $vend - $t0}") s, queued report ended $(awk "BEGIN{printf \"%.3f\", $rend - $vend}") s after it, $active LVs active in it; $(tail -1 /tmp/vgc.out)"
	t1=$(date +%s.%N); lvm fullreport --reportformat json -o lv_name,lv_active >/dev/null 2>&1; echo "round $round: a report after it took $(awk "BEGIN{printf \"%.3f\", $(date +%s.%N) - $t1}") s"
done
exit $fail
