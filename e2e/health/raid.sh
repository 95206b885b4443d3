#!/usr/bin/env bash
# RAID under declared pools, in one boot of the test guest with five small
# disks (serials mda, mdb, ra, rb, rc):
#
#  1. md: VG mdvg sits on /dev/md0, an md raid1 over mda and mdb. In sync,
#     keel check reports no raid finding; with mdb failed (mdadm --fail)
#     it reports raid.degraded md0 (an error, exit 1), and its printed
#     remedy, typed as printed, brings the member back (the recovery runs,
#     then md0 is whole and the finding gone).
#  2. LVM raid1: raidvg/r1 has one leg on ra and one on rb (rc is free for
#     a repair). Once in sync keel check reports no raid finding. rb taken
#     offline (the disk gone: SCSI device state "offline", I/O to it
#     fails) makes LVM report the LV "partial": keel check
#     reports raid.degraded raidvg/r1 (exit 1). The disk back, the kernel
#     still has the leg failed, LVM reports "refresh needed": keel check
#     reports raid.refresh_needed and its remedy, typed as printed, heals
#     the LV. The leg gone again for good, the remedy of raid.degraded
#     (lvconvert --repair), typed as printed, rebuilds the leg on rc.
#
# Node snapshots of each state are kept in $OUT/raid for the host tests.
# Run: go test -tags e2e -run TestRaid ./e2e/health/
# Prints "ok:" / "FAIL:" lines and exits with the number of failures.
set -u
O=$OUT/raid
mkdir -p "$O"
versions >"$O/versions.txt" 2>&1
. "$SHARE/wipelib.sh"

mkdir -p /etc/keel
chmod 755 /etc/keel
install -m 0644 "$SHARE/raid.cue" /etc/keel/raid.cue
CFG=/etc/keel/raid.cue

ma=$(disk mda) mb=$(disk mdb) ra=$(disk ra) rb=$(disk rb) rc=$(disk rc)
mbdev=/dev/$(basename "$(readlink -f "$mb")")

# check NAME: run keel check, its output in CHECKED and status in RC.
check() {
	RC=0
	CHECKED=$("$KEEL" check -c "$CFG" 2>&1) || RC=$?
	echo "$CHECKED" | sed 's/^/    /'
	echo "    keel check rc $RC"
}
# snap NAME: a node snapshot of the host as it is now.
snap() { step "$KEEL" snapshot -o "$O/raid-$1.txtar" >/dev/null || fail "keel snapshot $1"; }
# remedy ID OBJECT: the remedy the last keel check printed for that finding.
remedy() {
	awk -v id="$1" -v o="$2" '$2 == id && $3 == o { f = 1; next }
		f && /^[A-Z]/ { f = 0 }
		f && $1 == "remedy:" { sub(/^ *remedy: */, ""); print; exit }' <<<"$CHECKED"
}
no_raid() {
	if grep -qE 'raid\.[a-z_]+ ' <<<"$CHECKED"; then
		fail "$1: keel check reports a raid finding"
	else
		ok "$1: keel check reports no raid finding"
	fi
}
has() { # has ID OBJECT RC TEXT
	if [ "$RC" -eq "$3" ] && grep -qE "$1 +$2( |$)" <<<"$CHECKED"; then
		ok "$4: keel check reports $1 $2 (rc $3)"
	else
		fail "$4: keel check rc $RC, want $3 with $1 $2"
	fi
}

# --- 1. md ------------------------------------------------------------------
must mdadm --create /dev/md0 --run --quiet --level=1 --raid-devices=2 --metadata=1.2 --assume-clean "$ma" "$mb"
must pvcreate -q /dev/md0
must vgcreate -q mdvg /dev/md0
check
no_raid "md0 in sync"
snap md-clean
must mdadm /dev/md0 --fail "$mb"
cat /proc/mdstat | sed 's/^/    /'
check
has raid.degraded /dev/md0 1 "md0 with a failed member"
snap md-degraded
r=$(remedy raid.degraded /dev/md0)
echo "    remedy: $r"
# The recovery is slowed (md.rst: sync_speed_max, KiB/s) for one capture
# of it running, then let go.
echo 500 >/sys/block/md0/md/sync_speed_max
if [ -n "$r" ] && step bash -c "$r"; then
	check
	has raid.resyncing /dev/md0 1 "md0 recovering onto the returned member"
	snap md-recovering
	echo system >/sys/block/md0/md/sync_speed_max
	mdadm --wait /dev/md0
	check
	if [ "$(cat /sys/block/md0/md/degraded)" = 0 ] && ! grep -qE 'raid\.[a-z_]+ +/dev/md0' <<<"$CHECKED"; then
		ok "remedy '$r' typed as printed: md0 whole again, raid.degraded gone"
	else
		fail "after '$r': md0 degraded $(cat /sys/block/md0/md/degraded) or a raid finding on /dev/md0 still reported"
	fi
else
	echo system >/sys/block/md0/md/sync_speed_max
	fail "remedy '$r' of raid.degraded /dev/md0 failed ($(tr '\n' ' ' </proc/mdstat))"
fi

# --- 2. LVM raid1 -----------------------------------------------------------
# rbstate STATE: the SCSI state of rb (sd(4): "offline" fails every I/O).
rbstate() { must sh -c "echo $1 > /sys/block/$(basename "$(readlink -f "$rb")")/device/state"; }
must pvcreate -q "$ra" "$rb" "$rc"
must vgcreate -q raidvg "$ra" "$rb" "$rc"
must lvcreate -q -y --type raid1 -m1 -L 24M -n r1 raidvg "$ra" "$rb"
for i in $(seq 600); do
	[ "$(lvs --noheadings -o sync_percent raidvg/r1 | tr -d ' ')" = 100.00 ] && break
	sleep 0.2
done
lvs -a -o lv_name,lv_attr,sync_percent,lv_health_status,devices raidvg | sed 's/^/    /'
check
no_raid "raidvg/r1 in sync"
snap lvmraid-clean

rbstate offline
dd if=/dev/urandom of=/dev/raidvg/r1 bs=1M count=2 oflag=direct status=none 2>/dev/null
lvs -a -o lv_name,lv_attr,lv_health_status,devices raidvg 2>&1 | sed 's/^/    /'
check
has raid.degraded raidvg/r1 1 "raidvg/r1 with its leg's disk gone"
snap lvmraid-partial

rbstate running
pvscan --cache >/dev/null 2>&1
lvs -a -o lv_name,lv_attr,lv_health_status,devices raidvg 2>&1 | sed 's/^/    /'
check
has raid.refresh_needed raidvg/r1 1 "raidvg/r1 with its leg's disk back"
snap lvmraid-refresh
r=$(remedy raid.refresh_needed raidvg/r1)
echo "    remedy: $r"
if [ -n "$r" ] && step bash -c "$r"; then
	for i in $(seq 600); do
		[ "$(lvs --noheadings -o sync_percent raidvg/r1 | tr -d ' ')" = 100.00 ] && break
		sleep 0.2
	done
	check
	if ! grep -qE 'raid\.(refresh_needed|degraded) +raidvg/r1' <<<"$CHECKED"; then
		ok "remedy '$r' typed as printed: raidvg/r1 healthy again"
	else
		fail "after '$r': raidvg/r1 still reported"
	fi
else
	fail "remedy '$r' of raid.refresh_needed raidvg/r1 failed"
fi

rbstate offline
dd if=/dev/urandom of=/dev/raidvg/r1 bs=1M count=2 oflag=direct status=none 2>/dev/null
check
r=$(remedy raid.degraded raidvg/r1)
echo "    remedy: $r"
if [ -n "$r" ] && step bash -c "yes | $r"; then
	lvs -a -o lv_name,lv_attr,lv_health_status,devices raidvg 2>&1 | sed 's/^/    /'
	check
	if ! grep -qE 'raid\.degraded +raidvg/r1' <<<"$CHECKED" && lvs -a --noheadings -o devices raidvg 2>/dev/null | grep -q "$(readlink -f "$rc")"; then
		ok "remedy '$r' typed as printed: the failed leg rebuilt on rc"
	else
		fail "after '$r': raid.degraded raidvg/r1 still reported or no leg on rc"
	fi
else
	fail "remedy '$r' of raid.degraded raidvg/r1 failed"
fi

echo "$FAILS failures"
exit "$FAILS"
