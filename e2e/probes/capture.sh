#!/usr/bin/env bash
# Scenario script for e2e/vm-run.sh: builds a few storage stacks in the test
# guest and records a node snapshot of each with `$KEEL snapshot` into $OUT.
# Run it with the disks --nvme 20G --hdd 40G --ssd 4G --hdd 8G:
#   e2e/vm-run.sh --keel bin/keel --share DIR --nvme 20G --hdd 40G --ssd 4G --hdd 8G e2e/probes/capture.sh
# It also runs `lvm fullreport` alone, to compare the probe pass with it.
set -u
snap() { # snap NAME
	step "$KEEL" snapshot -v -o "$OUT/$1.txtar"
	"$KEEL" status --node "$OUT/$1.txtar" >"$OUT/$1.status.txt" 2>&1
	"$KEEL" status --format json >"$OUT/$1.live.json" 2>"$OUT/$1.live.err"
}
mkdir -p "$OUT"
versions
NV=$(disk nvme0) || exit 2
HD=$(disk hdd1) || exit 2
SSD=$(disk ssd2) || exit 2
HD3=$(disk hdd3) || exit 2

snap empty
step pvcreate -q "$NV"
snap orphan-pv

# A split VDO pool: index at the front on NVMe, middle on HDD, journal at the NVMe tail.
step pvcreate -q "$HD"
step vgcreate -q vg0 "$NV" "$HD"
step lvcreate -y -q -L 4G -n lvb vg0 "$NV"
step lvextend -q -L +8G vg0/lvb "$HD"
step lvextend -q -L +1G vg0/lvb "$NV"
step lvconvert -y -q --type vdo-pool -n vdo_b -V 30G --vdosettings index_memory_size_mb=256 vg0/lvb
# A thin pool next to it, and bcache on the other two disks.
step lvcreate -y -q --type thin-pool --chunksize 512k -L 2G -n tp vg0 "$NV"
step lvcreate -y -q -V 5G -T vg0/tp -n thin1
step make-bcache -C "$SSD"
step make-bcache -B "$HD3"
udevadm settle
for i in $(seq 50); do [ -e /sys/block/bcache0/bcache ] && break; sleep 0.1; done
cset=$(ls /sys/fs/bcache | grep -- -)
echo "$cset" >/sys/block/bcache0/bcache/attach
echo writeback >/sys/block/bcache0/bcache/cache_mode
echo 0 >/sys/block/bcache0/bcache/sequential_cutoff
snap mixed

# Grow the pool onto the HDD: the journal moves to the new end.
step lvextend -q -L +4G vg0/lvb "$HD"
snap vdo-split-grown

for i in 1 2 3; do
	step lvm fullreport --reportformat json --units b --nosuffix --all >/dev/null
done
for i in 1 2 3; do
	step "$KEEL" snapshot -o /dev/null
done
exit 0
