#!/usr/bin/env bash
# Scenario script for e2e/vm-run.sh: does keel activate's metadata report,
# started beside lvm2's own activation (docs/boot.md, step 0), slow that
# activation down? A VG of 2,001 LVs, 51 of them autoactivated (the
# boot-cost bench's 2,000-LV shape), is activated by lvm2's event
# autoactivation command, alone and with keel's report started 0.3 s after
# it at nice 19, alternating, caches dropped before each, five rounds; each
# round ends with the report alone.
#   e2e/vm-run.sh --share DIR --nvme 8G --timeout 1800 e2e/probes/reportcontend.sh \
#     e2e/scenarios/scale.sh e2e/scenarios/stacks.sh \
#     reconcile/activation/testdata/autoactivation.txtar
# The report's argv is keel's own, from the autoactivation capture. The
# figures ("round N mode M ...") are in DIR/guest.log.
set -uo pipefail
. "$SHARE/stacks.sh"
. "$SHARE/scale.sh"
versions
d=$(disk nvme0) || exit 2
pvcreate -q -y --metadatasize "$SCALE_MDA" "$d" && vgcreate -q big "$d" || exit 1
lvcreate -q -an -y -l1 -n vm-1000-disk-0 big >/dev/null || exit 1
scale_linear big 2000 50 >/tmp/grow.txt 2>&1 || { tail /tmp/grow.txt; exit 1; }
scale_autoactivation_off big 2000 50 >>/tmp/grow.txt 2>&1 || { tail /tmp/grow.txt; exit 1; }
echo "lvs: $(lvs --noheadings big | wc -l), autoactivated: $(lvs --noheadings -o lv_autoactivation big | grep -c enabled)"
# keel's argv (one JSON array; no argument holds '","').
argv=$(awk '/^-- cmd\/lvm-fullreport-readonly-.*\/argv --$/ { getline; print; exit }' "$SHARE/autoactivation.txtar")
[ -n "$argv" ] || { echo "FAIL: no readonly report argv in the capture"; exit 1; }
IFS=$'\x1f' read -r -a REP < <(printf '%s\n' "$argv" | sed -e 's/^\["//' -e 's/"\]$//' -e 's/","/\x1f/g')
[ "${REP[2]:-}" = --readonly ] || { echo "FAIL: not keel's readonly report: ${REP[*]}"; exit 1; }
now() { date +%s.%N; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.3f", b-a}'; }
TIMEFORMAT='%R %U %S'
fail=0
for round in 1 2 3 4 5; do
	for mode in alone beside; do
		vgchange -q -an big >/dev/null
		sync; echo 3 >/proc/sys/vm/drop_caches
		t0=$(now)
		lvm vgchange -aay --autoactivation event big >/tmp/vgc.out 2>&1 &
		vpid=$!
		rep=
		if [ $mode = beside ]; then
			sleep 0.3
			{ time nice -n 19 "${REP[@]}" >/tmp/rep.json 2>/tmp/rep.err; } 2>/tmp/rep.time &
			rpid=$!
		fi
		wait $vpid; t1=$(now)
		if [ $mode = beside ]; then
			wait $rpid
			rep=" report (real user sys) $(cat /tmp/rep.time), $(grep -o '"lv_autoactivation"' /tmp/rep.json | wc -l) LVs in it"
		fi
		active=$(lvs --noheadings -o lv_active big | grep -cw active)
		[ "$active" = 51 ] || { echo "FAIL: round $round $mode: $active LVs active"; fail=1; }
		echo "round $round mode $mode vgchange $(sub "$t0" "$t1") s$rep"
	done
	sync; echo 3 >/proc/sys/vm/drop_caches
	{ time "${REP[@]}" >/dev/null 2>&1; } 2>/tmp/t
	echo "round $round report alone (real user sys) $(cat /tmp/t)"
done
exit $fail
