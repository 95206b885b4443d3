#!/usr/bin/env bash
# A declared VG on a device-mapper multipath map, in one boot of the test
# guest. The guest has the dm-multipath kernel modules but not
# multipath-tools (multipathd needs systemd), so the map is made the way
# multipathd loads it, with dmsetup: two paths to one disk (the SCSI disk
# itself and a loop device over it, with direct I/O so that both paths see
# the same blocks), a round-robin path group, and a dm UUID starting
# "mpath-", the prefix by which LVM's devices/multipath_component_detection
# knows a path and hides it (lvm2 lib/device/dev-mpath.c: for SCSI and NVMe
# devices only, so LVM hides the SCSI path and takes the loop path for a
# duplicate of the map, preferring the map as a dm device).
#
#  1. healthy map: a node snapshot for the host tests (which check keel
#     raises no multipath finding on it);
#  2. one path failed (dmsetup message MAP 0 fail_path MAJ:MIN): keel check
#     raises pv.multipath_degraded naming the failed path, and its remedy
#     (dmsetup status MAP) runs as printed;
#  3. every path failed: pv.multipath_no_path, critical; its printed
#     remedies (dmsetup message MAP 0 reinstate_path MAJ:MIN) bring the paths
#     back;
#  4. both paths reinstated, the VG declared on one path (the SCSI disk)
#     instead of the map: keel check raises pv.multipath_component naming
#     /dev/mapper/MAP, and keel plan proposes no pvcreate or vgextend on the
#     path.
#
# Node snapshots of 1-3 are taken for the host tests of probes and
# reconcile/plan when the test keeps them (KEEL_MULTIPATH_SNAPSHOT_DIR, see
# multipath_test.go), and skipped otherwise.
#
# Run by TestMultipath (multipath_test.go), which gives the guest one 256 MiB
# SCSI disk of serial mp1.
# Prints "ok:" / "FAIL:" lines and exits with the number of failures.
set -u
T0=$(cut -d' ' -f1 /proc/uptime)
O=$OUT/multipath
mkdir -p "$O"
versions >"$O/versions.txt" 2>&1
. "$SHARE/wipelib.sh"
MAP=mpkeel

# check NAME CUE: keel check's text report, kept in $O/NAME.out.
check() {
	"$KEEL" check -c "$2" >"$O/$1.out" 2>&1
	echo "    keel check ($1) exit $?"
	sed 's/^/    /' "$O/$1.out" | tail -n 12
}
# snap NAME: a node snapshot, taken only when the host keeps the captures
# (the share holds "capture"): each pass costs seconds of guest time.
snap() {
	[ -e "$SHARE/capture" ] || return 0
	"$KEEL" snapshot -o "$O/$1.txtar" >/dev/null 2>"$O/$1.err" || fail "keel snapshot $1: $(tail -3 "$O/$1.err")"
}

# LVM hides the SCSI path; the loop path, which it does not know for one,
# would be a duplicate of the map's PV, and LVM refuses to change a VG
# with duplicate PVs: the guest's LVM does not scan loop devices. A host's
# paths are all SCSI or NVMe, and LVM hides each of them.
cat >>/etc/lvm/lvmlocal.conf <<'LVM'
devices {
	global_filter = [ "r|^/dev/loop[0-9]+$|" ]
}
LVM
must modprobe dm-multipath
must modprobe dm-round-robin
d=$(disk mp1) || { fail "setup: no disk mp1"; exit 100; }
dev=$(readlink -f "$d")
loop=$(losetup -f --show --direct-io=on "$dev") || { fail "setup: losetup over $dev"; exit 100; }
p1=$(lsblk -dno MAJ:MIN "$dev" | tr -d ' ')
p2=$(lsblk -dno MAJ:MIN "$loop" | tr -d ' ')
size=$(blockdev --getsz "$dev")
# dm-mpath's table (drivers/md/dm-mpath.c, multipath_ctr): no features, no
# hardware handler, one path group (the first used first), round-robin with
# no selector arguments, two paths of one argument each (repeat_count).
table="0 $size multipath 0 0 1 1 round-robin 0 2 1 $p1 1 $p2 1"
echo "    table: $table"
must dmsetup create "$MAP" -u "mpath-keel-e2e-$MAP" --table "$table"
udevadm settle
dmsetup status "$MAP" | sed 's/^/    status: /'
must pvcreate -q "/dev/mapper/$MAP"
must vgcreate -q mpvg "/dev/mapper/$MAP"
must lvcreate -q -y -L 16M -n data mpvg
pvs -o pv_name,vg_name 2>&1 | sed 's/^/    pvs: /'
mkdir -p /etc/keel
chmod 755 /etc/keel
install -m 0644 "$SHARE/mpmap.cue" /etc/keel/mpmap.cue
install -m 0644 "$SHARE/mppath.cue" /etc/keel/mppath.cue

# --- 1. healthy ---------------------------------------------------------------
# That keel raises nothing on the healthy map is the host tests' (on this
# snapshot): a keel check pass here would cost seconds of guest time.
snap multipath-healthy

# --- 2. one path failed -------------------------------------------------------
must dmsetup message "$MAP" 0 fail_path "$p2"
dmsetup status "$MAP" | sed 's/^/    status: /'
check degraded /etc/keel/mpmap.cue
snap multipath-degraded
if grep -A1 'pv.multipath_degraded' "$O/degraded.out" | grep -q "${loop#/dev/}"; then
	ok "one path of $MAP failed: pv.multipath_degraded names ${loop#/dev/}"
else
	fail "one path of $MAP failed: keel check does not raise pv.multipath_degraded naming ${loop#/dev/}"
fi
if grep -q "dmsetup status $MAP" "$O/degraded.out"; then
	if dmsetup status "$MAP" >/dev/null; then
		ok "remedy 'dmsetup status $MAP' runs as printed"
	else
		fail "remedy 'dmsetup status $MAP' failed"
	fi
else
	fail "pv.multipath_degraded's remedy does not print 'dmsetup status $MAP'"
fi

# --- 3. no path left ----------------------------------------------------------
must dmsetup message "$MAP" 0 fail_path "$p1"
dmsetup status "$MAP" | sed 's/^/    status: /'
check nopath /etc/keel/mpmap.cue
snap multipath-nopath
if grep -q 'CRITICAL *pv.multipath_no_path' "$O/nopath.out"; then
	ok "no active path left in $MAP: pv.multipath_no_path is critical"
else
	fail "no active path left in $MAP: keel check does not raise a critical pv.multipath_no_path"
fi
# The remedy's reinstate commands, typed as printed, bring both paths back.
grep -o "dmsetup message $MAP 0 reinstate_path [0-9:]*" "$O/nopath.out" | sort -u >"$O/reinstate.txt"
while read -r cmd; do
	step $cmd
done <"$O/reinstate.txt"
st=$(dmsetup status "$MAP")
echo "    status: $st"
if [ "$(wc -l <"$O/reinstate.txt")" = 2 ] && [ "$(grep -o '[0-9]*:[0-9]* A ' <<<"$st" | wc -l)" = 2 ]; then
	ok "remedy 'dmsetup message $MAP 0 reinstate_path' typed as printed brought both paths back"
else
	fail "the printed reinstate_path remedies ($(wc -l <"$O/reinstate.txt")) did not bring both paths back"
	must dmsetup message "$MAP" 0 reinstate_path "$p1"
	must dmsetup message "$MAP" 0 reinstate_path "$p2"
fi

# --- 4. a path declared instead of the map ------------------------------------
check component /etc/keel/mppath.cue
if grep -q 'pv.multipath_component' "$O/component.out" && grep -q "/dev/mapper/$MAP" "$O/component.out"; then
	ok "the VG declared on path $d: pv.multipath_component names /dev/mapper/$MAP"
else
	fail "the VG declared on path $d: keel check does not raise pv.multipath_component naming /dev/mapper/$MAP"
fi
"$KEEL" plan -c /etc/keel/mppath.cue >"$O/plan-component.out" 2>&1
sed 's/^/    /' "$O/plan-component.out" | tail -n 8
if grep -q 'pvcreate\|vgextend' "$O/plan-component.out"; then
	fail "keel plan proposes pvcreate/vgextend on the path $d of $MAP"
else
	ok "keel plan proposes nothing on the path $d of $MAP"
fi

dmsetup remove "$MAP" 2>/dev/null || true
awk -v a="$T0" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN{printf "scenario time %.0fs\n", b-a}'
echo "FAILS=$FAILS"
exit "$FAILS"
