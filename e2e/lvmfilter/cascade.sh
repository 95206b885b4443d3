#!/usr/bin/env bash
# Where keel's lvm.conf settings take effect, in one boot of the test guest
# (run by cascade_test.go):
#
#  1. symlink: /etc/lvm/lvm.conf is a symlink (config management keeps the
#     file elsewhere), owned root:disk, mode 0640; keel apply of scanLVs:
#     true writes through the link: the link stays, the target holds the
#     value, owner and mode are kept. (The guest has no setfattr: the
#     SELinux label is kept by atomicfile.Replace, tested on the host.)
#  2. cascade: /etc/lvm/lvmlocal.conf sets scan_lvs = 0, which wins over
#     lvm.conf (lvm.conf(5), "config cascade"). Two keel apply: the value
#     in force becomes the declared one, or keel reports where it is set;
#     the second pass writes nothing. Then a tag file (lvm_<hostname>.conf,
#     tags/hosttags = 1) sets it: keel reports lvm.conf_overridden and writes
#     nothing.
#  3. devices file: a system.devices made while use_devicesfile=0 lists only
#     the spare disk; lvm2 2.03.31 sets it aside on its next command, so
#     turning the feature on hides nothing. Then the file in force and
#     stale (a PV on a detached loop device): LVM hides hostvg, keel check
#     names hostvg's declared PV and the stale entry.
#
# Prints "ok:" / "FAIL:" lines and exits with the number of failures.
set -u
O=$OUT/cascade
mkdir -p "$O"
. "$SHARE/wipelib.sh"
nv=$(disk nvme0) hd=$(disk hdd1)
nvdev=$(readlink -f "$nv")
mkdir -p /etc/keel
chmod 755 /etc/keel
for f in scan.cue devfile.cue devfile-on.cue; do install -m 0644 "$SHARE/$f" /etc/keel/$f; done
inforce() { lvmconfig --typeconfig full "devices/$1" 2>/dev/null | sed 's/.*=//'; }

must pvcreate -q "$nv"
must vgcreate -q hostvg "$nv"
must lvcreate -q -y -L 16M -n data hostvg
must pvcreate -q "$hd"
cp /etc/lvm/lvm.conf "$O/lvm.conf.stock"

# --- 1. symlink --------------------------------------------------------------
mkdir -p /etc/lvm-managed
mv /etc/lvm/lvm.conf /etc/lvm-managed/lvm.conf
ln -s /etc/lvm-managed/lvm.conf /etc/lvm/lvm.conf
chown root:disk /etc/lvm-managed/lvm.conf
chmod 0640 /etc/lvm-managed/lvm.conf
"$KEEL" apply -c /etc/keel/scan.cue >"$O/apply-1.out" 2>&1
echo "apply-1 exit $?"; sed 's/^/    /' "$O/apply-1.out" | tail -n 15
t=/etc/lvm/lvm.conf
if [ -L $t ] && [ "$(readlink $t)" = /etc/lvm-managed/lvm.conf ]; then
	ok "lvm.conf is still a symlink to /etc/lvm-managed/lvm.conf"
else
	fail "lvm.conf is no longer the symlink: $(ls -l $t)"
fi
if [ "$(inforce scan_lvs)" = 1 ] && grep -q 'scan_lvs *= *1' /etc/lvm-managed/lvm.conf; then
	ok "the target holds scan_lvs = 1, in force"
else
	fail "scan_lvs in force $(inforce scan_lvs), target: $(grep -n scan_lvs /etc/lvm-managed/lvm.conf | grep -v '#')"
fi
own=$(stat -L -c %U:%G:%a $t)
[ "$own" = root:disk:640 ] && ok "owner and mode kept (root:disk 0640)" || fail "owner and mode now $own, were root:disk:640"

# --- 2. cascade --------------------------------------------------------------
cp /etc/lvm/lvmlocal.conf "$O/lvmlocal.conf.stock" 2>/dev/null
printf '\ndevices {\n\tscan_lvs = 0\n}\n' >>/etc/lvm/lvmlocal.conf
echo "scan_lvs in force with lvmlocal.conf's 0: $(inforce scan_lvs)"
"$KEEL" snapshot -o "$O/node-local.txtar" >/dev/null 2>&1 || echo "keel snapshot failed"
"$KEEL" apply -c /etc/keel/scan.cue >"$O/apply-2.out" 2>&1
echo "apply-2 exit $?"; sed 's/^/    /' "$O/apply-2.out" | tail -n 15
sums() { sha256sum /etc/lvm-managed/lvm.conf /etc/lvm/lvmlocal.conf | cut -d' ' -f1 | tr '\n' ' '; }
s1=$(sums)
"$KEEL" apply -c /etc/keel/scan.cue >"$O/apply-3.out" 2>&1
echo "apply-3 exit $?"; sed 's/^/    /' "$O/apply-3.out" | tail -n 15
s2=$(sums)
"$KEEL" check -c /etc/keel/scan.cue >"$O/check-2.out" 2>&1
echo "check exit $?"; sed 's/^/    /' "$O/check-2.out" | tail -n 10
v=$(inforce scan_lvs)
if [ "$v" = 1 ]; then
	ok "scan_lvs = 1 in force: keel wrote where the setting takes effect"
elif grep -q lvmlocal.conf "$O/check-2.out"; then
	ok "keel check names lvmlocal.conf, where the setting in force is set"
else
	fail "scan_lvs in force is still $v and keel check does not say where it is set"
fi
if [ "$s1" = "$s2" ] && ! grep -q 'lvm.conf:lvm.conf' "$O/apply-3.out"; then
	ok "the second apply ran no lvm.conf action and wrote nothing"
else
	fail "the second apply acted again (files $s1 -> $s2)"
fi
# 2b. A tag file wins over both: lvm_<hostname>.conf, loaded with
# tags/hosttags = 1 (lvm.conf(5), "tags"). keel cannot make the value
# take effect by writing lvm.conf or lvmlocal.conf, so it must say so and
# not act.
printf '\ntags {\n\thosttags = 1\n}\n' >>/etc/lvm-managed/lvm.conf
printf 'devices {\n\tscan_lvs = 0\n}\n' >"/etc/lvm/lvm_$(uname -n).conf"
echo "scan_lvs in force with lvm_$(uname -n).conf's 0: $(inforce scan_lvs)"
"$KEEL" snapshot -o "$O/node-tag.txtar" >/dev/null 2>&1 || echo "keel snapshot failed"
s1=$(sums)
"$KEEL" apply -c /etc/keel/scan.cue >"$O/apply-5.out" 2>&1
echo "apply-5 exit $?"; sed 's/^/    /' "$O/apply-5.out" | tail -n 15
s2=$(sums)
if grep -q lvm.conf_overridden "$O/apply-5.out" && ! grep -q 'lvm.conf:lvm.conf' "$O/apply-5.out" && [ "$s1" = "$s2" ]; then
	ok "a tag file sets scan_lvs: keel reports lvm.conf_overridden and writes nothing"
else
	fail "with a tag file setting scan_lvs keel acted or did not report it (files $s1 -> $s2)"
fi
rm -f "/etc/lvm/lvm_$(uname -n).conf"
sed -i '/^tags {$/,$d' /etc/lvm-managed/lvm.conf
sed -i '/^devices {$/,$d' /etc/lvm/lvmlocal.conf

# --- 3. devices file ---------------------------------------------------------
# lvm2 >= 2.03.24 renames a system.devices that exists while
# use_devicesfile=0 to system.devices-unused.<date>.<time> on its next
# command (lib/device/dev-cache.c, devices_file_rename_unused): a stale file
# made while the feature is off cannot wait for keel to turn it on here, so
# keel apply of useDevicesFile: true hides nothing (on older lvm2 keel's
# planner refuses it, tested on the host with this boot's system.devices).
rm -f /etc/lvm/devices/system.devices*
# Debian's lvm2 installs no lvmdevices link: lvm runs it by name.
lvm lvmdevices -y --adddev "$hd" --config 'devices/use_devicesfile=1' >"$O/lvmdevices.out" 2>&1 ||
	echo "lvmdevices --adddev failed: $(cat "$O/lvmdevices.out")"
cp /etc/lvm/devices/system.devices "$O/system.devices"
sed 's/^/    /' /etc/lvm/devices/system.devices
"$KEEL" apply -c /etc/keel/devfile.cue >"$O/apply-4.out" 2>&1
echo "apply-4 exit $?"; sed 's/^/    /' "$O/apply-4.out" | tail -n 15
ls /etc/lvm/devices | sed 's/^/    /'
if vgs hostvg >/dev/null 2>&1 && [ "$(inforce use_devicesfile)" = 1 ] && ls /etc/lvm/devices/system.devices-unused.* >/dev/null 2>&1; then
	ok "lvm2 set the stale system.devices aside: turning the devices file on hid nothing"
else
	fail "use_devicesfile $(inforce use_devicesfile), vgs hostvg: $(vgs hostvg 2>&1 | tail -1)"
fi

# 3b. The devices file in force and stale: made again with use_devicesfile=1,
# listing only the spare disk, so LVM no longer sees hostvg; then a PV on a
# loop device is added and the loop device detached, so its entry matches
# no device (a disk pulled without lvmdevices --deldev).
lvm lvmdevices -y --adddev "$hd" >"$O/lvmdevices-2.out" 2>&1 ||
	echo "lvmdevices --adddev failed: $(cat "$O/lvmdevices-2.out")"
truncate -s 16M /tmp/gone.img
lo=$(losetup -f --show /tmp/gone.img)
pvcreate -q "$lo" >/dev/null
lvm lvmdevices -y --adddev "$lo" >/dev/null 2>&1
losetup -d "$lo"
if vgs hostvg >/dev/null 2>&1; then
	fail "with the devices file in force LVM still shows hostvg; the step proves nothing"
else
	ok "with the devices file in force LVM hides hostvg"
fi
"$KEEL" snapshot -o "$O/node-devfile-on.txtar" >/dev/null 2>&1 || echo "keel snapshot failed"
"$KEEL" check -c /etc/keel/devfile-on.cue >"$O/check-5.out" 2>&1
sed 's/^/    /' "$O/check-5.out" | tail -n 24
if grep -q lvm.devices_file_missing_pv "$O/check-5.out" && grep -q "PV /dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_nvme0 of VG hostvg" "$O/check-5.out"; then
	ok "with the devices file in force keel check names hostvg's PV it does not list"
else
	fail "keel check does not name hostvg's PV missing from the devices file in force"
fi
if grep -q lvm.devices_file_stale "$O/check-5.out"; then
	ok "keel check reports the entry that matches no PV (lvm.devices_file_stale)"
else
	fail "keel check does not report the stale devices file entry"
fi
exit $FAILS
