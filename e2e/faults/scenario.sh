#!/usr/bin/env bash
# Faults under a VDO pool, and under a thin pool's metadata, on a real
# kernel, in one boot of the test guest (disks: nvme0 20G, hdd1 4G; 2G RAM).
# The PV is a device-mapper device "flt" over the NVMe whose table is
# swapped (dmsetup suspend/load/resume), as lvm2's test suite does with aux
# error_dev and aux delay_dev: linear (healthy), error (EIO) or delay (reads
# late). Each phase runs keel check against desired/faults.cue
# ($OUT/<phase>.json, .rc, .secs) and records the host with keel snapshot
# ($OUT/<phase>.txtar). e2e/faults/faults_test.go judges the results.
#
# Phases: base (healthy), thin-slow-metadata (a thin pool on hdd1 whose
# metadata writes land 12 s late: keel check must not wait for them),
# index-closed (vdo.index), dedupe-timeouts (reads of the PV delayed past
# dm-vdo's dedupe timeout: vdo.dedupe_timeouts), index-opening (the pool
# started with its data read 0.5 s late: vdo.index_opening, info), eio (the PV returns EIO:
# the pool turns read-only, keel apply changes nothing), readonly (the PV
# healthy again, the pool still read-only; keel apply changes nothing),
# memory (an inactive second pool whose block map cache the host cannot
# hold: vdo.memory).
#
# Alone: e2e/vm-run.sh --mem 2G --keel bin/keel --nvme 20G:nvme0 --hdd 4G:hdd1 \
#        --share DIR e2e/faults/scenario.sh (DIR holding desired/faults.cue)
set -uo pipefail
nv=$(disk nvme0) || exit 2
D=$SHARE/desired
POOL=fvg-vpool-vpool
SETTINGS="logical_threads=1 physical_threads=1 hash_zone_threads=1 cpu_threads=1 bio_threads=1 ack_threads=1 max_discard=4096"
# flt starts 1 MiB into the NVMe, so LVM never finds the PV label on the
# NVMe itself (a duplicate PV); its size is the rest of the disk.
disk_sectors=$(blockdev --getsz "$nv") || exit 2
sectors=$((disk_sectors - 2048))

# swap DEV TABLE: load TABLE (one or more lines, from standard input) into
# the device-mapper device DEV while the stack above it stays open.
swap() {
	dmsetup suspend --nolockfs "$1" && dmsetup load "$1" <<<"$2" && dmsetup resume "$1" &&
		echo "$1: $(dmsetup table "$1" | tr '\n' ';')"
}

# table KIND: swap flt's table.
table() {
	local t
	case $1 in
	linear) t="0 $sectors linear $nv 2048" ;;
	error) t="0 $sectors error" ;;
	# reads 6 s late (above dm-vdo's 5 s dedupe timeout), writes at once
	delay) t="0 $sectors delay $nv 2048 6000 $nv 2048 0" ;;
	# LVM's label and metadata (the first MiB, before pe_start) at once,
	# the reads of the LVs' data 0.5 s late
	slowdata) t="0 2048 linear $nv 2048
2048 $((sectors - 2048)) delay $nv 4096 500 $nv 4096 0" ;;
	esac
	swap flt "$t"
}
vdo_status() { dmsetup status "$POOL"; }
# wait_index STATE SECONDS: until the pool's UDS index is in STATE (the
# status field after the mode and recovery ones); false if it never was.
wait_index() {
	local i
	for i in $(seq $(($2 * 10))); do
		[ "$(vdo_status | awk '{print $7}')" = "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

# phase NAME [DESIRED]: keel check (bounded: a hung command fails the phase)
# and keel snapshot of the host as it is now.
phase() {
	local name=$1 desired=${2:-$D/faults.cue} t0 rc=0
	echo "== phase $name: $(vdo_status)"
	t0=$(date +%s)
	timeout 240 "$KEEL" check -c "$desired" --format json >"$OUT/$name.json" 2>"$OUT/$name.err" || rc=$?
	echo $rc >"$OUT/$name.rc"
	echo $(($(date +%s) - t0)) >"$OUT/$name.secs"
	echo "keel check: exit $rc in $(cat "$OUT/$name.secs")s; $(grep -o '"id": "[a-z._]*"' "$OUT/$name.json" | tr '\n' ' ')"
	timeout 240 "$KEEL" snapshot -o "$OUT/$name.txtar" || echo "keel snapshot $name: exit $?"
}

# apply_unchanged NAME: keel apply with a command log; lvs before and after.
apply_unchanged() {
	local name=$1 rc=0 t0
	lvs -a --noheadings -o lv_name,lv_attr,lv_size,seg_size fvg >"$OUT/$name.lvs-before" 2>&1
	echo "lvs exit $?" >>"$OUT/$name.lvs-before"
	t0=$(date +%s)
	timeout 240 "$KEEL" apply -c "$D/faults.cue" --command-log "$OUT/$name.cmds" >"$OUT/$name.apply.txt" 2>&1 || rc=$?
	echo $rc >"$OUT/$name.apply.rc"
	echo $(($(date +%s) - t0)) >"$OUT/$name.apply.secs"
	lvs -a --noheadings -o lv_name,lv_attr,lv_size,seg_size fvg >"$OUT/$name.lvs-after" 2>&1
	echo "lvs exit $?" >>"$OUT/$name.lvs-after"
	echo "keel apply ($name): exit $rc in $(cat "$OUT/$name.apply.secs")s, $(wc -l <"$OUT/$name.cmds") commands"
	tail -5 "$OUT/$name.apply.txt"
}

step dmsetup create flt --table "0 $sectors linear $nv 2048" || exit 1
step pvcreate -q /dev/mapper/flt || exit 1
step vgcreate -q fvg /dev/mapper/flt || exit 1
step lvcreate -y --type vdo -L 10G -V 5G -n vlv fvg/vpool --vdosettings "$SETTINGS" || exit 1
dmsetup table "$POOL"
phase base

# thin-slow-metadata: a thin pool on its own device-mapper device "tflt"
# (over hdd1) whose writes, flushes included, land 12 s late while reads
# are at once. Once a pool has changed since activation, every commit of
# its metadata writes the superblock, and a status read without
# DM_NOFLUSH_FLAG commits first (pool_status in drivers/md/dm-thin.c;
# in_service in dm-thin-metadata.c): such a read waits for the slow write,
# in the kernel, beyond any timeout. keel check must not wait; a flushing
# dmsetup status, timed after it, shows the fault bites.
hd=$(disk hdd1) || exit 2
hd_sectors=$(($(blockdev --getsz "$hd") - 2048))
tflt_table() { # linear|delay
	local t
	case $1 in
	linear) t="0 $hd_sectors linear $hd 2048" ;;
	delay) t="0 $hd_sectors delay $hd 2048 0 $hd 2048 12000" ;;
	esac
	swap tflt "$t"
}
# ms CMD...: run CMD (bounded) and print its wall time in milliseconds.
ms() {
	local t0 t1
	t0=$(cut -d' ' -f1 /proc/uptime)
	timeout 200 "$@" >/dev/null 2>&1 || echo "$*: exit $?" >&2
	t1=$(cut -d' ' -f1 /proc/uptime)
	awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%d\n", (b-a)*1000}'
}
step dmsetup create tflt --table "0 $hd_sectors linear $hd 2048" || exit 1
step pvcreate -q /dev/mapper/tflt || exit 1
step vgcreate -q tvg /dev/mapper/tflt || exit 1
step lvcreate -q -y --type thin-pool -L 1G --chunksize 64K -n tpool tvg || exit 1
step lvcreate -q -y --thin -V 2G -n tlv tvg/tpool || exit 1
step dd if=/dev/urandom of=/dev/tvg/tlv bs=1M count=16 oflag=direct conv=fsync status=none || exit 1
step dmsetup status tvg-tpool-tpool || exit 1 # commits now, on the fast table
tflt_table delay || exit 1
echo "dmsetup status --noflush: $(ms dmsetup status --noflush tvg-tpool-tpool) ms"
echo "lvs tvg: $(ms lvs tvg) ms"
phase thin-slow-metadata
# The control: a plain dmsetup status, which commits first. The commit
# writes several blocks one after the other, 12 s each (48 s in full), so
# once it has waited past the first 12 s the linear table goes back under
# it: dm-delay sends the writes it holds at once when its device is
# suspended (delay_presuspend in drivers/md/dm-delay.c) and the commit ends.
ms dmsetup status tvg-tpool-tpool >"$OUT/thin-slow-metadata.flush-ms" &
flush=$!
# 13 s by the clock, polled without forks (a fork costs tens of ms under TCG).
now_cs() { local u; read -r u _ </proc/uptime; NOW=$((10#${u/./})); }
exec 8<> <(:)
now_cs
end=$((NOW + 1300))
while kill -0 "$flush" 2>/dev/null; do
	now_cs
	[ "$NOW" -ge "$end" ] && break
	read -r -t 0.1 -u 8 || true
done
tflt_table linear || exit 1
wait "$flush"
echo "dmsetup status (commits first): $(cat "$OUT/thin-slow-metadata.flush-ms") ms"
step vgremove -q -y -ff tvg || exit 1
step pvremove -q /dev/mapper/tflt || exit 1
step dmsetup remove tflt || exit 1

# vdo.index: the index taken offline under a pool whose table says
# deduplication on.
step dmsetup message "$POOL" 0 index-close || exit 1
wait_index closed 10
phase index-closed
step dmsetup message "$POOL" 0 index-enable || exit 1
wait_index online 60
vdo_status

# vdo.dedupe_timeouts: the index answers after dm-vdo's 5 s dedupe timeout
# (vdo_dedupe_index_timeout_interval in drivers/md/dm-vdo/dedupe.c; 6.12 has no
# module parameter for it). 8 MiB written, then 272 MiB of unique data so the
# 8 MiB's records sit in a closed chapter of the index, not the open one kept
# in memory; the pool restarted on the healthy PV so the index is loaded
# (volume index in memory) with a cold chapter cache; then reads of flt
# delayed 6 s (a delay table, writes not delayed) and 2 MiB of it written again
# (enough for timeouts; each more MiB only makes the step longer):
# each duplicate's chapter read takes 6 s and its query times out. With the
# delay already in place across the restart (two earlier tries) the index
# was still loading when the rewrite came and no query was posted at all.
step dd if=/dev/urandom of=/tmp/dup bs=1M count=8 status=none || exit 1
step dd if=/tmp/dup of=/dev/fvg/vlv bs=1M count=8 oflag=direct conv=fsync status=none || exit 1
step dd if=/dev/urandom of=/dev/fvg/vlv bs=1M seek=16 count=272 oflag=direct conv=fsync status=none || exit 1
restart_pool() {
	step lvchange -an fvg/vlv && step lvchange -ay fvg/vlv || return 1
	wait_index online 60 && return 0
	echo "index not online after restart: $(vdo_status)"
	return 1
}
restart_pool || exit 1
table delay || exit 1
t0=$(date +%s)
timeout 300 dd if=/tmp/dup of=/dev/fvg/vlv bs=1M seek=400 count=2 oflag=direct conv=fsync status=none || echo "rewrite on the slow PV: exit $?"
echo "rewrite of 2 MiB on the slow PV: $(($(date +%s) - t0))s"
table linear || exit 1
dmsetup message "$POOL" 0 stats | grep -o 'dedupeAdviceTimeouts : [0-9]*'
phase dedupe-timeouts

# vdo.index_opening: the pool started while the reads of its data are 0.5 s
# late. dm-vdo opens the index after every start (creation, activation,
# boot) and the load's reads keep it "opening" while keel checks; as an
# error it would fire after every boot. The restart also clears the pool's
# statistics: the later phases start at 0 timeouts.
step lvchange -an fvg/vlv || exit 1
table slowdata || exit 1
t0=$(date +%s)
timeout 300 lvchange -ay fvg/vlv || { echo "lvchange -ay on the slow PV: exit $?"; exit 1; }
echo "lvchange -ay on the slow PV: $(($(date +%s) - t0))s"
wait_index opening 10
phase index-opening
echo "after the check: $(vdo_status)"
table linear || exit 1
wait_index online 60 || { echo "index not online on the healthy PV: $(vdo_status)"; exit 1; }
echo "index online $(($(date +%s) - t0))s after the start"

# vdo.mode and a PV that returns EIO: the error target under the pool, a
# write and a flush; VDO turns read-only.
table error || exit 1
timeout 60 dd if=/tmp/dup of=/dev/fvg/vlv bs=1M seek=600 count=2 oflag=direct conv=fsync status=none && echo "write on EIO succeeded"
for i in $(seq 300); do [ "$(vdo_status | awk '{print $5}')" = read-only ] && break; sleep 0.1; done
vdo_status
phase eio
apply_unchanged eio

# The PV healthy again: the pool stays read-only until rebuilt.
table linear || exit 1
phase readonly
apply_unchanged readonly

# vdo.memory: a second pool, left inactive, whose block map cache the host
# cannot hold beside the first.
step lvcreate -y --type vdo -L 6G -V 1G -n vlv2 fvg/vpool2 --vdosettings "$SETTINGS" || exit 1
step lvchange -an fvg/vlv2 || exit 1
step lvchange --vdosettings block_map_cache_size_mb=4096 fvg/vpool2
lvs -a -o lv_name,lv_active,vdo_block_map_cache_size fvg
phase memory-inactive
phase memory-create "$D/faults-memory.cue"
free -m
exit 0
