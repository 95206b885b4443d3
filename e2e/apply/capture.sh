#!/usr/bin/env bash
# Captures, in the test guest, the real outputs the executor, lvmconf, bcache
# and uevent unit tests replay: blkid/pvs/lvs answers, lvmconfig --validate,
# trixie's stock lvm.conf, bcache sysfs read-backs (including a clamped
# writeback_percent) and raw uevent datagrams of a bcache re-registration.
# Run with: e2e/vm-run.sh --nvme 20G --hdd 8G --ssd 4G --hdd 4G \
#             e2e/apply/capture.sh e2e/scenarios/stacks.sh <static ueventcap binary>
# Results land in the share's out/capture/. A setup step that fails stops the
# capture with exit 1 (its outputs are not fixtures); the recorded commands
# (rec) may fail, their status is part of what is captured.
set -u
. "$SHARE/stacks.sh"
O=$OUT/capture
mkdir -p "$O"
versions >"$O/versions.txt" 2>&1
must() { "$@" || { echo "capture: setup failed: $*" >&2; exit 1; }; }
nv=$(disk nvme0) || exit 1
hdd=$(disk hdd1) || exit 1
ssd=$(disk ssd2) || exit 1
spare=$(disk hdd3) || exit 1
rec() { # rec NAME CMD... : stdout to NAME.out, stderr to NAME.err, status to NAME.rc
	local name=$1
	shift
	"$@" >"$O/$name.out" 2>"$O/$name.err"
	echo $? >"$O/$name.rc"
}

cp /etc/lvm/lvm.conf "$O/lvm.conf.trixie"
rec validate-ok lvmconfig --validate
bad=$(mktemp -d)
cp /etc/lvm/lvm.conf "$bad/lvm.conf"
printf 'devices {\n\tscan_lvs = "bogus"\n}\n' >>"$bad/lvm.conf"
rec validate-bad env LVM_SYSTEM_DIR="$bad" lvmconfig --validate

rec blkid-blank blkid -p -o export "$nv"
must mkfs.ext4 -q -F "$spare"
rec blkid-ext4 blkid -p -o export "$spare"
must pvcreate -q "$nv"
rec blkid-pv blkid -p -o export "$nv"
rec pvs-orphan pvs --noheadings -o vg_name "$nv"
must vgcreate -q vgcap "$nv"
rec pvs-member pvs --noheadings -o vg_name "$nv"
must lvcreate -q -y --type vdo -n vdocap -L 5G -V 10G --vdosettings index_memory_size_mb=256 vgcap/vpcap
rec lvs-closed lvs --reportformat json -o lv_name,pool_lv,lv_device_open vgcap
exec 3</dev/vgcap/vdocap
rec lvs-open lvs --reportformat json -o lv_name,pool_lv,lv_device_open vgcap
exec 3<&-

mkdir -p "$O/uevents"
"$SHARE/ueventcap" -o "$O/uevents" >"$O/ueventcap.log" 2>&1 &
cap=$!
udevadm monitor --kernel --property >"$O/udevadm-monitor.txt" 2>&1 &
mon=$!
sleep 0.5
must make-bcache -C "$ssd" >/dev/null
must make-bcache -B "$hdd" >/dev/null
udevadm settle
for i in $(seq 50); do [ -e /sys/block/bcache0/bcache ] && break; sleep 0.1; done
must test -e /sys/block/bcache0/bcache
cset=$(bcache_cset "$ssd")
echo "$cset" >"$O/cset-uuid.txt"
echo "$cset" >/sys/block/bcache0/bcache/attach || { echo "capture: attach $cset failed" >&2; exit 1; }
b=/sys/block/bcache0/bcache
for f in sequential_cutoff writeback_percent writeback_rate writeback_rate_minimum cache_mode state; do
	cat "$b/$f" >"$O/bcache-default-$f.txt"
done
for f in congested_read_threshold_us congested_write_threshold_us; do
	cat "/sys/fs/bcache/$cset/$f" >"$O/bcache-default-$f.txt"
done
w() { # w FILE VALUE TAG: write VALUE, record the read-back and write status
	local f=$1 v=$2 tag=$3
	echo "$v" >"$f" 2>"$O/bcache-$tag.err"
	echo $? >"$O/bcache-$tag.rc"
	cat "$f" >"$O/bcache-$tag.txt"
}
w $b/sequential_cutoff 0 sequential_cutoff-0
w $b/sequential_cutoff 1000000 sequential_cutoff-1000000
w $b/sequential_cutoff 4M sequential_cutoff-4M
w $b/sequential_cutoff 8388608 sequential_cutoff-8388608
w $b/writeback_percent 70 writeback_percent-70
w $b/writeback_percent 40 writeback_percent-40
w $b/cache_mode writeback cache_mode-writeback
w $b/writeback_rate 2048 writeback_rate-2048
w $b/writeback_rate_minimum 16 writeback_rate_minimum-16
w /sys/fs/bcache/$cset/congested_read_threshold_us 0 congested_read_threshold_us-0
w /sys/fs/bcache/$cset/congested_write_threshold_us 0 congested_write_threshold_us-0
readlink -f /sys/block/bcache0/bcache/.. >"$O/bcache0-dir.txt"
cat $b/backing_dev_uuid >"$O/bcache-backing_dev_uuid.txt" 2>&1
ls /sys/block/bcache0/bcache/ >"$O/bcache-attrs.txt"

# Stop and register again: what a reboot does to the tunables (stacks.sh's
# bcache_reregister waits for a new bcache0, not the old one going away).
must bcache_reregister "$ssd" "$hdd"
for f in sequential_cutoff writeback_percent cache_mode; do
	cat "/sys/block/bcache0/bcache/$f" >"$O/bcache-reregistered-$f.txt"
done
sleep 1
kill $cap $mon 2>/dev/null
ls "$O/uevents" | wc -l >"$O/uevent-count.txt"
[ "$(cat "$O/uevent-count.txt")" -gt 0 ] || { echo "capture: no uevent captured" >&2; exit 1; }
echo capture done
