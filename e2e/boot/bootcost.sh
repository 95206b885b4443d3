#!/usr/bin/env bash
# One measured boot of the boot-cost bench (e2e/boot, TestBootCost). The
# boot that just happened ran in the mode /var/lib/keel-bench/mode names:
#   keel  keel-activate.service and keel.service enabled (the package's units);
#   lvm   both disabled, lvm-bare.service (the bare `vgchange -aay` per VG)
#         enabled instead.
# lvm2's own udev autoactivation and keel's udev rules are on in both. The
# figures come from systemd's monotonic timestamps (µs since the kernel
# started): the activation unit's main process start and its READY (Type=
# notify) or end (oneshot), and the pve-guests stand-in's activation. Then
# the next boot's mode is the other one, so both modes share the host's load
# boot by boot. With GROW=2000 set (by the test, before the first boot at
# 2,000 LVs), vdovg is grown to 2,000 VM disks after the measurement.
set -uo pipefail
fail=0
flunk() { echo "FAIL: $*"; fail=1; }
st=/var/lib/keel-bench
mode=$(cat $st/mode)
lvs=$(cat $st/lvs)
case $mode in
keel) unit=keel-activate.service other=lvm-bare.service next=lvm ;;
lvm) unit=lvm-bare.service other=keel-activate.service next=keel ;;
*) echo "FAIL: unknown mode $mode"; exit 1 ;;
esac
show() { systemctl show -P "$1" "$2"; }
s=$(show ExecMainStartTimestampMonotonic $unit)
a=$(show ActiveEnterTimestampMonotonic $unit)
g=$(show ActiveEnterTimestampMonotonic pve-guests.service)
[ "$(systemctl is-active $unit)" = active ] && [ "$s" -gt 0 ] && [ "$a" -ge "$s" ] || flunk "$unit: $(systemctl is-active $unit), start $s, ready $a"
[ "$(show ActiveEnterTimestampMonotonic $other)" = 0 ] || flunk "$other ran in mode $mode"
[ "$g" -ge "$a" ] || flunk "pve-guests stand-in active at ${g}us, before $unit at ${a}us"
# The LVs a guest start needs: every VM disk with autoactivation on.
# Counted from the fields, not with -S: a selection on lv_autoactivation
# matched none of the 48 autoactivated VM disks in the guest (lvm2 2.03.31).
want=$(lvs --noheadings -o lv_autoactivation vdovg 2>/dev/null | grep -c enabled)
got=$(lvs --noheadings -o lv_active vdovg 2>/dev/null | grep -cw active)
[ "$want" -gt 0 ] && [ "$got" = "$want" ] || flunk "vdovg: $got LVs active, $want to autoactivate"
# The anchor: lvm2's first activation unit's start (udev starts
# lvm-activate-<vg>.service once a VG's PVs are complete), or the
# activation unit's own start if that came first. Nothing of keel's has
# run before it in either mode, so the time from it to the guests is
# what keel can change, without the boot-to-boot spread of the kernel,
# the initrd and udev's coldplug before it.
l2=$(journalctl -b -o short-monotonic --no-pager 2>/dev/null |
	awk '/systemd\[1\]: Started lvm-activate-/ { match($0, /[0-9]+\.[0-9]+/); printf "%.0f\n", substr($0, RSTART, RLENGTH) * 1e6; exit }')
[ -n "$l2" ] || flunk "no lvm-activate unit started in this boot's journal"
anchor=${l2:-$s}
[ "$anchor" -le "$s" ] || anchor=$s
echo "bootcost lvs=$lvs mode=$mode start_us=$s ready_us=$a ready_ms=$(((a - s) / 1000)) guests_us=$g anchor_us=$anchor active=$got/$(lvs --noheadings -o lv_name vdovg | wc -l) guestload=$(cut -d' ' -f1 /proc/loadavg)"
# Where the boot's time went: lvm2's own autoactivation units, the
# activation unit's lines, and the guests, from the journal (seconds since the
# kernel started).
journalctl -b -o short-monotonic --no-pager 2>/dev/null |
	grep -E 'lvm-activate-|now active|(Starting|Started|Finished) (keel-activate|lvm-bare|pve-guests)|keel-activate\[[0-9]+\]|Finished systemd-udev-trigger|Reached target (sysinit|basic)|(Started|Finished) lvm2-monitor' |
	sed 's/^/timeline /' | cut -c1-240
# The CPU time each unit's processes used (systemd's cgroup accounting,
# kept after they exit): keel-boot's or keel's wait beside lvm2 counts in
# keel-activate's, lvm2's vgchange in its lvm-activate unit's, which are
# gone by now.
echo "timeline cpu: $(for u in $unit keel.service pve-guests.service; do printf '%s %s ms; ' $u $(($(systemctl show -P CPUUsageNSec $u 2>/dev/null | grep -E '^[0-9]+$' || echo 0) / 1000000)); done)"
journalctl -b -o short-monotonic -u $unit >"$OUT/unit.txt" 2>&1
[ "$(systemctl is-active $unit)" = active ] || sed 's/^/unit journal: /' "$OUT/unit.txt" | tail -n 20
[ $mode = keel ] && journalctl -b -o json SYSLOG_IDENTIFIER=keel-activate >"$OUT/activate.json" 2>&1
[ $mode = keel ] && echo "timeline keel-activate's fields: $(grep -o '"MESSAGE":"[^"]*"\|"TOOK":"[^"]*"\|"SINCE_MAIN":"[^"]*"\|"COMMAND":"[^"]*"' "$OUT/activate.json" | tr '\n' ' ' | cut -c1-1500)"

if [ "${GROW:-}" = 2000 ]; then
	. "$SHARE/stacks.sh"
	. "$SHARE/scale.sh"
	cp $st/scale-vdovg.base /tmp/scale-vdovg.base
	# 2,000 VM disks, 50 of them active and autoactivated, as on a host with
	# 50 running VMs: the other 1,950 have autoactivation off. Without it
	# every boot would create 2,000 devices, in both modes alike.
	if scale_linear vdovg 2000 50 >"$OUT/grow.txt" 2>&1; then
		scale_autoactivation_off vdovg 2000 50 >>"$OUT/grow.txt" 2>&1 ||
			flunk "autoactivation off: $(tail -3 "$OUT/grow.txt")"
	else
		flunk "grow to 2000: $(tail -5 "$OUT/grow.txt")"
	fi
	echo 2000 >$st/lvs
	echo "grown: $(lvs --noheadings -o lv_name vdovg | wc -l) VM disks, $(lvs --noheadings -o lv_autoactivation vdovg | grep -c enabled) autoactivated, $(lvs --noheadings -o lv_active vdovg | grep -cw active) active"
fi

if [ $next = keel ]; then
	systemctl disable -q lvm-bare.service && systemctl enable -q keel-activate.service keel.service
else
	systemctl disable -q keel-activate.service keel.service && systemctl enable -q lvm-bare.service
fi || flunk "switch to mode $next"
echo $next >$st/mode
sync
exit $fail
