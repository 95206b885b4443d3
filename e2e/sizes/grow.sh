#!/usr/bin/env bash
# Declared sizes kept after creation (grow_test.go), in one boot. VG sizevg
# is made by hand on virtio disk data1 and a 64 MiB loop device, with thin
# pool tp at 64M; the desired state declares tp at 128M and a third PV,
# virtio disk data2 (blank). The loop device's file is then grown to
# 128 MiB and re-read (losetup -c), as a LUN or a virtual disk resized under
# a PV. keel plan must show the three grows, keel apply must run them:
#  1. lvextend of tp to its declared 128M;
#  2. pvresize of the loop PV to its device's new size;
#  3. vgextend of sizevg with data2, after the blank check.
# Prints "ok:" / "FAIL:" lines and exits with the number of failures.
set -u
O=$OUT/sizes
mkdir -p "$O"
. "$SHARE/wipelib.sh" # ok, fail, must

d1=$(disk data1)
d2=$(disk data2)
img=/var/tmp/sizes-pv.img
must truncate -s 64M "$img"
loop=$(losetup -f --show "$img") || { fail "setup: losetup"; exit 100; }
mkdir -p /etc/keel
chmod 755 /etc/keel
sed "s|@LOOP@|$loop|" "$SHARE/grow.cue" >/etc/keel/grow.cue
chmod 644 /etc/keel/grow.cue
must pvcreate -q "$d1" "$loop"
must vgcreate -q sizevg "$d1" "$loop"
must lvcreate -q -y --type thin-pool -L 64M --chunksize 64K -n tp sizevg "$d1"
must truncate -s 128M "$img"
must losetup -c "$loop"
pvsize() { pvs --noheadings --units b --nosuffix -o pv_size "$1" | tr -d ' '; }
before_pv=$(pvsize "$loop")
echo "    loop PV $loop: pv_size $before_pv, device $(blockdev --getsize64 "$loop")"
"$KEEL" snapshot -o "$O/sizes-before.txtar" >/dev/null 2>&1 || fail "keel snapshot"

sizeIDs='thin\.size|vg\.pv_grown|vg\.pv_not_in_vg|vg\.pvs_drift'
chk=$("$KEEL" check -c /etc/keel/grow.cue 2>&1)
echo "$chk" | grep -E "$sizeIDs" | sed 's/^/    /'
n=$(grep -Ec "$sizeIDs" <<<"$chk")
if grep -q 'thin\.size' <<<"$chk" && grep -q 'vg\.pv_grown' <<<"$chk" && grep -q 'vg\.pv_not_in_vg' <<<"$chk"; then
	ok "check: keel check reports thin.size, vg.pv_grown and vg.pv_not_in_vg"
else
	fail "check: keel check reports $n size findings, not thin.size, vg.pv_grown and vg.pv_not_in_vg"
fi

plan=$("$KEEL" plan -c /etc/keel/grow.cue 2>&1)
echo "$plan" | sed 's/^/    /'
for w in "lvextend" "pvresize" "vgextend"; do
	if grep -q "$w" <<<"$plan"; then ok "plan: keel plan shows $w"; else fail "plan: keel plan shows no $w"; fi
done

rc=0
out=$("$KEEL" apply -c /etc/keel/grow.cue 2>&1) || rc=$?
echo "$out" | sed 's/^/    /'
tp=$(lvs --noheadings --units b --nosuffix -o lv_size sizevg/tp | tr -d ' ')
if [ "$tp" = $((128 << 20)) ]; then
	ok "thin: tp grown to its declared 128M (apply exit $rc)"
else
	fail "thin: tp is $tp bytes, declared 128M (apply exit $rc)"
fi
after_pv=$(pvsize "$loop")
if [ "$after_pv" -gt "$before_pv" ]; then
	ok "pv: the loop PV was pvresized to its grown device"
else
	fail "pv: the loop PV is still $after_pv bytes after its device grew"
fi
if [ "$(pvs --noheadings -o vg_name "$d2" 2>/dev/null | tr -d ' ')" = sizevg ]; then
	ok "vg: data2 was added to sizevg"
else
	fail "vg: data2 is not in sizevg"
fi
chk=$("$KEEL" check -c /etc/keel/grow.cue 2>&1)
if grep -Eq "$sizeIDs" <<<"$chk"; then
	fail "check: a size finding is left after apply"
	echo "$chk" | sed 's/^/    /'
else
	ok "check: no size finding left after apply"
fi
exit "$FAILS"
