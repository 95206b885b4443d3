#!/usr/bin/env bash
# Boot 1 of the reboot test (e2e/boot): install keel's .deb, build the
# VDO-on-bcache stack with a stacked VG from blank disks (keel apply), write
# data and keep its checksum, install keel's udev rules, enable the units and
# a pve-guests stand-in. Disks: nvme0 20G, hdd1 60G (slow), ssd2 8G (cache).
set -uo pipefail
. "$SHARE/stacks.sh"
nv=$(disk nvme0) || exit 2
hd=$(disk hdd1) || exit 2
ssd=$(disk ssd2) || exit 2
fail=0
pass() { echo "PASS: $*"; }
flunk() { echo "FAIL: $*"; fail=1; }

rc=0
dpkg -i "$SHARE/keel.deb" >"$OUT/dpkg.txt" 2>&1 || rc=$?
cat "$OUT/dpkg.txt"
[ $rc = 0 ] && pass "dpkg -i keel.deb" || flunk "dpkg -i exit $rc"
# No desired state yet: the postinst must have enabled and started nothing.
if ! systemctl is-enabled -q keel.service && ! systemctl is-enabled -q keel-activate.service && ! systemctl is-active -q keel.service; then
	pass "postinst without a desired state: nothing enabled or started"
else
	flunk "postinst enabled or started a unit without a desired state"
fi
# dpkg -L: the guest image's dpkg excludes /usr/share/man from unpacking.
dpkg -L keel | grep -q '/usr/share/man/man8/keel-activate.8.gz' && dpkg -L keel | grep -q '/usr/share/bash-completion/completions/keel' &&
	pass "package lists the man pages and the bash completion" || flunk "no man page or completion in the package"
dpkg -L keel | grep -qx '/usr/libexec/keel/keel-boot' && [ -x /usr/libexec/keel/keel-boot ] &&
	pass "package installs keel-boot" || flunk "no /usr/libexec/keel/keel-boot"

lvm_conf_save
stack_bcache "$ssd" "$hd" || flunk "make-bcache"
uuid=$(cat /sys/block/bcache0/bcache/backing_dev_uuid)
# The planner resolves a by-id backing path only for an LVM PV: name the
# backing device by its UUID (as e2e/apply does).
sed "s|\"/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_hdd1\"|\"$uuid\"|" "$SHARE/desired.cue" >/etc/keel/keel.cue
chmod 644 /etc/keel/keel.cue
rc=0
keel apply -c /etc/keel -v >"$OUT/apply.txt" 2>"$OUT/apply.err" || rc=$?
cat "$OUT/apply.txt"
[ $rc = 0 ] && pass "keel apply converged the stack" || { flunk "keel apply exit $rc"; tail -20 "$OUT/apply.err"; }

lvcreate -q -y -L 256M -n data vdovg >/dev/null || flunk "lvcreate vdovg/data"
dd if=/dev/urandom of=/dev/vdovg/data bs=1M count=64 oflag=direct status=none || flunk "write data"
mkdir -p /var/lib/keel-e2e && head -c 64M /dev/vdovg/data | sha256sum | cut -d' ' -f1 >/var/lib/keel-e2e/data.sha256
cp /var/lib/keel-e2e/data.sha256 "$OUT/"

rc=0
keel udev-rules --write >"$OUT/udev-write.txt" 2>&1 || rc=$?
cat "$OUT/udev-write.txt"
cp /etc/udev/rules.d/*keel* "$OUT/" 2>/dev/null
[ $rc = 0 ] && grep -q LVM_PVSCAN_ON_LVS /etc/udev/rules.d/68-keel-pvscan-on-lvs.rules &&
	grep -q "CACHED_UUID}==\"$uuid\"" /etc/udev/rules.d/70-keel-bcache.rules &&
	pass "udev rules written" || flunk "udev rules: exit $rc"
rc=0
keel udev-rules --check >"$OUT/udev-check.txt" 2>&1 || rc=$?
[ $rc = 0 ] && pass "udev rules in sync after --write" || flunk "udev-rules --check exit $rc: $(cat "$OUT/udev-check.txt")"

# The metrics textfile at a configured path (upstream node_exporter's
# directory, not Debian's): keel.service's sandbox must allow it (boot 2).
mkdir -p /var/lib/node_exporter/textfile_collector
printf 'alerts: textfile: "/var/lib/node_exporter/textfile_collector/keel.prom"\n' >/etc/keel/alerts.cue
chmod 644 /etc/keel/alerts.cue

install -m 644 "$SHARE/pve-guests.service" /etc/systemd/system/pve-guests.service
# A short bound for the test's third boot, where the slow disk is gone.
mkdir -p /etc/systemd/system/keel-activate.service.d
printf '[Service]\nExecStart=\nExecStart=/usr/libexec/keel/keel-boot --timeout 20s --leave-pass-to-daemon --wait-nice 19\n' >/etc/systemd/system/keel-activate.service.d/e2e.conf
systemctl daemon-reload
# An upgrade from a keel whose unit had RequiredBy=pve-guests.service:
# its `systemctl enable` left this link, which made one failed activation
# keep every guest from starting.
mkdir -p /etc/systemd/system/pve-guests.service.requires
ln -sf /lib/systemd/system/keel-activate.service /etc/systemd/system/pve-guests.service.requires/keel-activate.service
# What the postinst does once a desired state exists. Its start of
# keel.service returns at the daemon's READY, after its first load has put
# the desired state in keel's cache, where keel-boot finds it at boot 2.
dpkg-reconfigure keel >"$OUT/reconfigure.txt" 2>&1 || flunk "dpkg-reconfigure keel"
systemctl enable -q pve-guests.service
systemctl is-enabled -q keel-activate.service && systemctl is-enabled -q keel.service &&
	pass "postinst with a desired state enabled both units" || flunk "units not enabled"
if [ -e /etc/systemd/system/pve-guests.service.requires/keel-activate.service ] || systemctl show -P Requires pve-guests.service | grep -q keel-activate; then
	flunk "pve-guests requires keel-activate: $(ls -la /etc/systemd/system/pve-guests.service.requires/ 2>&1 | tail -n +2)"
else
	pass "pve-guests does not require keel-activate (the old RequiredBy link is gone)"
fi
systemctl list-dependencies --after pve-guests.service --plain 2>/dev/null | grep -q keel-activate &&
	pass "pve-guests ordered after keel-activate" || flunk "pve-guests not ordered after keel-activate"
lvmconfig --typeconfig full devices/scan_lvs >"$OUT/scan_lvs.txt"
sync
exit $fail
