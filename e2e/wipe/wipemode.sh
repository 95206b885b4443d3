#!/usr/bin/env bash
# How keel clears an absent LV depends on the devices under the LV itself,
# in one boot of the test guest:
#   a. vms sits on a VDO LV (lab/vdolv) and was extended with an SSD whose
#      TRIM keeps the bytes (qemu discard=ignore). An absent LV allocated on
#      that SSD is removed with removal.mode discard; a new LV given the same
#      extents must read zeroes, not the old bytes.
#   b. tvg/pooln was created with zeroing off (lvcreate -Z n): the removal of
#      its absent thin LV is held with a finding; once the printed remedy
#      (lvchange) is typed, the next keel apply removes it.
# Also records a node snapshot for the host tests (out/wipemode/).
#
# Run from the repository root with a static keel binary:
#   CGO_ENABLED=0 go build -o /tmp/keel ./cmd/keel
#   e2e/vm-run.sh --keel /tmp/keel --nvme 4G --trimkeep 256M:ssd1 --hdd 256M:hdd2 \
#       e2e/wipe/wipemode.sh e2e/wipe/wipemode.cue
# Prints "ok:" / "FAIL:" lines and exits with the number of failures.
set -u
O=$OUT/wipemode
mkdir -p "$O"
. "$SHARE/wipelib.sh"
# apply: keel apply with the desired state, its output indented.
apply() {
	local out rc=0
	out=$("$KEEL" apply -c "$CFG" 2>&1) || rc=$?
	echo "$out" | sed 's/^/    /'
	echo "    keel apply rc $rc"
}
# tail_sum DEV: the checksum of DEV past its first MiB (lvcreate zeroes the
# first 4K of a new LV and wipes signatures there).
tail_sum() { tail -c +1048577 "$1" | md5sum | cut -d' ' -f1; }
zeroes() { cmp -s -n "$(blockdev --getsize64 "$1")" "$1" /dev/zero; }

nv=$(disk nvme0) ssd=$(disk ssd1) hd=$(disk hdd2)
mkdir -p /etc/keel
chmod 755 /etc/keel
install -m 0644 "$SHARE/wipemode.cue" /etc/keel/wipemode.cue
CFG=/etc/keel/wipemode.cue

# --- setup -----------------------------------------------------------------
printf '\ndevices {\n\tscan_lvs = 1\n}\n' >>/etc/lvm/lvm.conf
must pvcreate -q "$nv"
must vgcreate -q lab "$nv"
# minimum_io_size 512: the VDO LV then has 512-byte logical blocks like the
# SSD; lvm2 refuses a VG of mixed block sizes (allow_mixed_block_sizes 0).
must lvcreate -q -y --type vdo -n vdolv -L 3G -V 512M --vdosettings 'slab_size_mb=128 minimum_io_size=512' lab/vpool
must pvcreate -q /dev/lab/vdolv
must vgcreate -q vms /dev/lab/vdolv
# The SSD added later: vms is now partly on VDO, partly on a plain disk.
must pvcreate -q "$ssd"
must vgextend -q vms "$ssd"
echo "    $ssd: discard_max_bytes $(cat /sys/block/"$(basename "$(readlink -f "$ssd")")"/queue/discard_max_bytes)"
must lvcreate -q -y -L 64M -n vm-100-disk-0 vms "$ssd"
must dd if=/dev/urandom of=/dev/vms/vm-100-disk-0 bs=1M count=64 oflag=direct status=none
old_sum=$(tail_sum /dev/vms/vm-100-disk-0)
old_ranges=$(lvs --noheadings -o seg_pe_ranges vms/vm-100-disk-0 | tr -d ' ')
# An LV with one segment on each PV, kept: the host tests' mixed case.
must lvcreate -q -y -L 8M -n mixed vms /dev/lab/vdolv
must lvextend -q -L +8M vms/mixed "$ssd"
# A thin pool that does not zero the chunks it hands out.
must pvcreate -q "$hd"
must vgcreate -q tvg "$hd"
must lvcreate -q -y -L 128M -T -c 64K -Z n tvg/pooln
must lvcreate -q -y -V 64M -T tvg/pooln -n vm-103-disk-0
must dd if=/dev/urandom of=/dev/tvg/vm-103-disk-0 bs=1M count=16 oflag=direct status=none
sync
lvs -a -o vg_name,lv_name,lv_attr,lv_size,seg_pe_ranges,devices,zero | sed 's/^/    /'
"$KEEL" snapshot -o "$O/node-wipemode.txtar" || fail "keel snapshot (setup)"

# --- a. an LV on the plain SSD of a VG stacked on VDO ----------------------
"$KEEL" check -c "$CFG" >"$O/check-1.txt" 2>&1
sed 's/^/    /' "$O/check-1.txt"
apply
if exists vms/vm-100-disk-0 || exists vms/del-vm-100-disk-0; then
	fail "a: keel apply left vms/vm-100-disk-0"
else
	ok "a: keel apply removed vms/vm-100-disk-0"
fi
must lvcreate -q -y -L 64M -n vm-101-disk-0 vms "$ssd"
new_ranges=$(lvs --noheadings -o seg_pe_ranges vms/vm-101-disk-0 | tr -d ' ')
if [ "$new_ranges" != "$old_ranges" ]; then
	fail "a: the new LV got $new_ranges, not the old extents $old_ranges"
elif [ "$(tail_sum /dev/vms/vm-101-disk-0)" = "$old_sum" ]; then
	fail "a: new vms/vm-101-disk-0 on $new_ranges reads the removed LV's bytes"
elif ! zeroes /dev/vms/vm-101-disk-0; then
	fail "a: new vms/vm-101-disk-0 on $new_ranges is not all zeroes"
else
	ok "a: new vms/vm-101-disk-0 on the same extents reads zeroes"
	echo "    extents: $new_ranges"
fi

# --- b. a thin LV of a pool with zeroing off ----------------------------------
t0=$(lvs --noheadings -o lv_uuid tvg/vm-103-disk-0 | tr -d ' ')
if grep -q "lv.absent_unzeroed_pool  *tvg/vm-103-disk-0" "$O/check-1.txt"; then
	ok "b: keel check reports lv.absent_unzeroed_pool tvg/vm-103-disk-0"
else
	fail "b: keel check lacks lv.absent_unzeroed_pool tvg/vm-103-disk-0"
fi
if exists tvg/vm-103-disk-0 && [ "$(lvs --noheadings -o lv_uuid tvg/vm-103-disk-0 | tr -d ' ')" = "$t0" ]; then
	ok "b: keel apply held tvg/vm-103-disk-0 (pool tvg/pooln does not zero)"
else
	fail "b: keel apply removed tvg/vm-103-disk-0 from a pool that does not zero"
fi
# The remedy as keel printed it: the first lvchange command of the finding.
remedy=$(grep -o 'lvchange [^;,]*tvg/pooln' "$O/check-1.txt" | head -n 1)
echo "    remedy: $remedy"
if [ -n "$remedy" ] && $remedy && [ "$(lvs --noheadings --binary -o zero tvg/pooln | tr -d ' ')" = 1 ]; then
	ok "b: remedy '$remedy' works as typed"
else
	fail "b: remedy '$remedy' did not turn zeroing on"
fi
apply
if exists tvg/vm-103-disk-0 || exists tvg/del-vm-103-disk-0; then
	fail "b: the next keel apply left tvg/vm-103-disk-0"
else
	ok "b: the next keel apply removed tvg/vm-103-disk-0"
fi

echo "FAILS=$FAILS"
exit "$FAILS"
