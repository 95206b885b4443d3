#!/usr/bin/env bash
# Boot 1 of the boot-cost bench (e2e/boot, TestBootCost): install keel's
# .deb, build examples/vdo-on-bcache.cue with keel apply, give vdovg 48 VM
# disks (~50 LVs in all, e2e/scenarios/scale.sh, as the guest bench does),
# write keel's udev rules, install the pve-guests stand-in and the bare LVM
# activation unit, and leave keel's units enabled for the next boot.
# Disks: nvme0 20G, hdd1 60G (slow), ssd2 8G (cache).
set -uo pipefail
. "$SHARE/stacks.sh"
. "$SHARE/scale.sh"
hd=$(disk hdd1) || exit 2
ssd=$(disk ssd2) || exit 2
fail=0
pass() { echo "PASS: $*"; }
flunk() { echo "FAIL: $*"; fail=1; }

dpkg -i "$SHARE/keel.deb" >"$OUT/dpkg.txt" 2>&1 && pass "dpkg -i keel.deb" || { flunk "dpkg -i: $(tail -3 "$OUT/dpkg.txt")"; exit 1; }
lvm_conf_save
stack_bcache "$ssd" "$hd" || { flunk "make-bcache"; exit 1; }
uuid=$(cat /sys/block/bcache0/bcache/backing_dev_uuid)
# The planner resolves a by-id backing path only for an LVM PV: name the
# backing device by its UUID (as e2e/apply and boot1.sh do).
sed "s|\"/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_hdd1\"|\"$uuid\"|" "$SHARE/desired.cue" >/etc/keel/keel.cue
chmod 644 /etc/keel/keel.cue
keel apply -c /etc/keel >"$OUT/apply.txt" 2>&1 && pass "keel apply converged the stack" || { flunk "keel apply: $(tail -5 "$OUT/apply.txt")"; exit 1; }
scale_room vdovg >"$OUT/scale.txt" 2>&1 && scale_linear vdovg 48 48 >>"$OUT/scale.txt" 2>&1 &&
	pass "vdovg has $(lvs --noheadings -o lv_name vdovg | wc -l) VM disks" || { flunk "scale: $(tail -5 "$OUT/scale.txt")"; exit 1; }
# scale_linear grows the LVs later from this base (bootcost.sh, GROW).
mkdir -p /var/lib/keel-bench
cp /tmp/scale-vdovg.base /var/lib/keel-bench/scale-vdovg.base
echo 50 >/var/lib/keel-bench/lvs
keel udev-rules --write >"$OUT/udev.txt" 2>&1 && pass "keel udev rules written" || flunk "keel udev-rules --write: $(cat "$OUT/udev.txt")"

install -m 644 "$SHARE/pve-guests.service" /etc/systemd/system/pve-guests.service
install -m 644 "$SHARE/lvm-bare.service" /etc/systemd/system/lvm-bare.service
systemctl daemon-reload
systemctl enable -q pve-guests.service keel-activate.service keel.service && systemctl disable -q lvm-bare.service &&
	echo keel >/var/lib/keel-bench/mode && pass "next boot: keel's units" || flunk "systemctl enable"
sync
exit $fail
