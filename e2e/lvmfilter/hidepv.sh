#!/usr/bin/env bash
# lvm.conf as the platform left it (hidepv_test.go), in one boot:
#
#  1. lvm.conf carries Proxmox VE's stock block (pve-manager's debian/postinst,
#     set_lvm_conf: global_filter rejecting zd, rbd and nbd devices) and VG
#     datavg lives on a virtio disk. A desired filter that accepts only
#     /dev/disk/by-id/ata-.* would hide that PV: keel apply must refuse it,
#     name the PV, and leave lvm.conf unchanged byte for byte.
#  2. A declared reject list: keel apply writes it and keeps the platform's
#     three rejects, and datavg stays visible.
#  3. Debian's lvm2 initramfs hook copies /etc/lvm into the initramfs, and
#     keel reported the initramfs as holding the older lvm.conf.
# Prints "ok:" / "FAIL:" lines and exits with the number of failures.
set -u
O=$OUT/hidepv
mkdir -p "$O"
. "$SHARE/wipelib.sh" # ok, fail, must
conf_sum() { sha256sum /etc/lvm/lvm.conf | cut -d' ' -f1; }
sees_datavg() { vgs --noheadings -o vg_name 2>/dev/null | grep -qw datavg; }

vd=$(disk data1)
mkdir -p /etc/keel
chmod 755 /etc/keel
install -m 0644 "$SHARE/hidepv-hide.cue" /etc/keel/hide.cue
install -m 0644 "$SHARE/hidepv-keep.cue" /etc/keel/keep.cue
cat >>/etc/lvm/lvm.conf <<'CONF'
devices {
     # added by pve-manager to avoid scanning ZFS zvols and Ceph rbds
     global_filter=["r|/dev/zd.*|","r|/dev/rbd.*|","r|/dev/nbd.*|"]
     use_devicesfile = 0
}
CONF
cp /etc/lvm/lvm.conf "$O/lvm.conf.pve"
must pvcreate -q "$vd"
must vgcreate -q datavg "$vd"
must lvcreate -q -y -L 16M -n keep datavg
"$KEEL" snapshot -o "$O/hidepv-pve-stock.txtar" >/dev/null 2>&1 || fail "keel snapshot"

# --- 1. a filter that hides a PV in use --------------------------------------
before=$(conf_sum)
rc=0
out=$("$KEEL" apply -c /etc/keel/hide.cue 2>&1) || rc=$?
echo "$out" | sed 's/^/    /'
if [ "$(conf_sum)" = "$before" ]; then
	ok "hide: lvm.conf unchanged byte for byte (apply exit $rc)"
else
	fail "hide: keel rewrote lvm.conf: $(lvmconfig devices/global_filter 2>&1)"
fi
if sees_datavg; then ok "hide: LVM still sees datavg"; else fail "hide: LVM no longer sees datavg"; fi
chk=$("$KEEL" check -c /etc/keel/hide.cue 2>&1)
if grep -q 'lvm.filter_hides_pv' <<<"$chk" && grep -q "$vd" <<<"$chk"; then
	ok "hide: keel check reports lvm.filter_hides_pv naming $vd"
else
	fail "hide: keel check does not report lvm.filter_hides_pv naming $vd"
	echo "$chk" | sed 's/^/    /'
fi
cp "$O/lvm.conf.pve" /etc/lvm/lvm.conf

# --- 2. the platform's rejects are kept ---------------------------------------
rc=0
out=$("$KEEL" apply -c /etc/keel/keep.cue 2>&1) || rc=$?
echo "$out" | sed 's/^/    /'
gf=$(lvmconfig devices/global_filter 2>&1)
echo "    $gf"
missing=""
for r in 'r|/dev/zd.*|' 'r|/dev/rbd.*|' 'r|/dev/nbd.*|' 'r|/dev/mapper/.*-(snap_)?(vm|base)--[0-9]+--disk--[0-9]+|'; do
	grep -qF "\"$r\"" <<<"$gf" || missing="$missing $r"
done
if [ -z "$missing" ]; then
	ok "keep: global_filter has the declared reject and pve-manager's three (apply exit $rc)"
else
	fail "keep: global_filter lacks$missing"
fi
if sees_datavg; then ok "keep: LVM still sees datavg"; else fail "keep: LVM no longer sees datavg"; fi

# --- 3. the initramfs -----------------------------------------------------------
hook=/usr/share/initramfs-tools/hooks/lvm2
if [ -f "$hook" ] && grep -q '/etc/lvm' "$hook"; then
	ok "initramfs: $hook copies /etc/lvm: $(grep -m1 '/etc/lvm' "$hook" | sed 's/^[[:space:]]*//')"
else
	fail "initramfs: $hook does not copy /etc/lvm"
fi
if grep -q 'update-initramfs -u' <<<"$out"; then
	ok "initramfs: keel apply said to run update-initramfs -u"
else
	fail "initramfs: keel apply did not say the initramfs holds the older lvm.conf"
fi
exit "$FAILS"
