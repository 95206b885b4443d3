#!/usr/bin/env bash
# keel activate against what lvm2 itself leaves inactive, a slow activation
# command and an invalid desired state, in one boot of the test guest:
#
#  1. lvm2's autoactivation rules (tools/vgchange.c, lib/activate): a
#     Proxmox VE thin snapshot (activation-skip by default), a template made
#     with lvchange -ky, a VG with autoactivation off and an LV outside
#     activation/auto_activation_volume_list stay inactive after vgchange
#     -aay; keel activate must return at once, leaving them as lvm2 does.
#     The node is captured for reconcile/activation's host tests.
#  2. an activation command slower than a minute (thin_check of a large
#     pool, stood in for by lvm.conf's thin_check_executable): keel activate
#     must wait for it, never kill it, and bring the stack up.
#  3. an invalid desired state: keel activate uses the last one that loaded
#     and says so; without any good one it exits 2.
#
# Prints "ok:" / "FAIL:" lines and exits with the number of failures.
set -u
O=$OUT/activate
mkdir -p "$O"
versions >"$O/versions.txt" 2>&1
# ok, fail, must and FAILS: the safe-removal scenarios' helpers.
. "$SHARE/wipelib.sh"
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
active() { [ "$(lvs --noheadings -o lv_active "$1" 2>/dev/null | tr -d ' ')" = active ]; }

h1=$(disk hdd1) && h2=$(disk hdd2) && h3=$(disk hdd3) || exit 2
mkdir -p /etc/keel
chmod 755 /etc/keel
cat >/etc/keel/keel.cue <<CUE
volumeGroups: {
	pve: pvs: ["$h1"]
	offvg: pvs: ["$h2"]
	listvg: pvs: ["$h3"]
}
CUE
chmod 644 /etc/keel/keel.cue

# --- 1. what lvm2 does not autoactivate --------------------------------------
must pvcreate -q "$h1" "$h2" "$h3"
must vgcreate -q pve "$h1"
must lvcreate -q -y --type thin-pool -L 256M -n data pve
must lvcreate -q -y -V 64M -T pve/data -n vm-100-disk-0
# pve-storage LvmThinPlugin::volume_snapshot: lvcreate --name snap_<vm>_<name>
# --snapshot vg/lv; lvm2 sets the activation-skip flag on a thin snapshot
# (activation/auto_set_activation_skip=1).
must lvcreate -q -y -n snap_vm-100-disk-0_before -s pve/vm-100-disk-0
# A template: pve-storage LvmThinPlugin::create_base renames to base-* and
# runs lvchange -ky.
must lvcreate -q -y -V 64M -T pve/data -n base-101-disk-0
must lvchange -q -ky pve/base-101-disk-0
must vgcreate -q offvg "$h2"
must lvcreate -q -y -L 16M -n lv0 offvg
must vgchange -q --setautoactivation n offvg
must vgcreate -q listvg "$h3"
must lvcreate -q -y -L 16M -n in listvg
must lvcreate -q -y -L 16M -n out listvg
sed -i '/^activation {/a\	auto_activation_volume_list = [ "pve", "offvg", "listvg/in" ]' /etc/lvm/lvm.conf
lvmconfig activation/auto_activation_volume_list >"$O/volume_list.txt" 2>&1
cat "$O/volume_list.txt"
must vgchange -q -an pve offvg listvg
# What lvm2's own autoactivation (the boot's vgchange -aay) brings up.
must vgchange -q -aay pve offvg listvg
lvs -a -o lv_full_name,lv_active,lv_attr,lv_autoactivation,vg_autoactivation >"$O/lvs-aay.txt" 2>&1
cat "$O/lvs-aay.txt"
"$KEEL" snapshot --activation-report -o "$O/node-autoactivation.txtar" >/dev/null 2>"$O/snapshot.err" ||
	fail "keel snapshot: $(tail -3 "$O/snapshot.err")"
# keel activate reads LVM's metadata during lvm2's own activation with
# --readonly (probes.ActivationReportCmd): lvm2 grants its read locks
# without taking the VG's flock, so the report does not queue behind the
# vgchange holding it, as the same report without --readonly does.
flock -x /run/lock/lvm/V_pve -c 'sleep 4' &
holder=$!
sleep 0.5
t0=$(now)
lvm fullreport --readonly --reportformat json -o vg_name >/dev/null 2>"$O/ro.err"
ro_rc=$? ro=$(secs "$t0" "$(now)")
t0=$(now)
lvm fullreport --reportformat json -o vg_name >/dev/null 2>"$O/rw.err"
rw_rc=$? rw=$(secs "$t0" "$(now)")
wait $holder
echo "with V_pve held for 4s: report --readonly exit $ro_rc in ${ro}s, without exit $rw_rc in ${rw}s"
if [ $ro_rc = 0 ] && [ $rw_rc = 0 ] && awk -v a="$ro" -v b="$rw" 'BEGIN { exit !(a < 1.5 && b >= 2.5) }'; then
	ok "lvm fullreport --readonly did not wait on the VG's lock; without --readonly it did"
else
	fail "lock held: --readonly exit $ro_rc in ${ro}s ($(head -c 300 "$O/ro.err")), without exit $rw_rc in ${rw}s"
fi
t0=$(now)
rc=0
"$KEEL" activate --timeout 20s >"$O/activate1.txt" 2>&1 || rc=$?
took=$(secs "$t0" "$(now)")
sed 's/^/    /' "$O/activate1.txt"
echo "keel activate: exit $rc in ${took}s"
if [ $rc = 0 ] && awk -v t="$took" 'BEGIN { exit !(t < 15) }'; then
	ok "keel activate returned at once (exit 0) with the LVs lvm2 does not autoactivate inactive"
else
	fail "keel activate exit $rc after ${took}s: $(grep -m2 -i 'inactive\|incomplete' "$O/activate1.txt")"
fi
left=""
for lv in pve/snap_vm-100-disk-0_before pve/base-101-disk-0 offvg/lv0 listvg/out; do
	active "$lv" && left="$left $lv"
done
[ -z "$left" ] && ok "keel activate left the snapshot, the template, offvg and listvg/out inactive, as lvm2 does" ||
	fail "keel activate activated what lvm2 leaves inactive:$left"

# --- 2. an activation command slower than a minute ---------------------------
# Only pve declared: the LVs of section 1 that lvm2 skips are removed, so
# that the slow command alone decides.
must lvremove -q -y pve/snap_vm-100-disk-0_before pve/base-101-disk-0
mkdir -p /etc/keel-slow
chmod 755 /etc/keel-slow
printf 'volumeGroups: pve: pvs: ["%s"]\n' "$h1" >/etc/keel-slow/keel.cue
chmod 644 /etc/keel-slow/keel.cue
tc=$(lvmconfig --typeconfig full global/thin_check_executable | sed 's/.*="\(.*\)"/\1/')
printf '#!/bin/sh\nsleep 65\nexec %s "$@"\n' "$tc" >/usr/local/sbin/slow-thin-check
chmod 755 /usr/local/sbin/slow-thin-check
sed -i '/^global {/a\	thin_check_executable = "/usr/local/sbin/slow-thin-check"' /etc/lvm/lvm.conf
must vgchange -q -an pve
t0=$(now)
rc=0
"$KEEL" activate -c /etc/keel-slow --timeout 20s >"$O/activate2.txt" 2>&1 || rc=$?
took=$(secs "$t0" "$(now)")
sed 's/^/    /' "$O/activate2.txt" | tail -12
echo "keel activate (slow thin_check): exit $rc in ${took}s"
if [ $rc = 0 ] && active pve/vm-100-disk-0 && ! grep -qi 'signal: killed' "$O/activate2.txt"; then
	ok "keel activate waited for the slow vgchange without killing it; pve/vm-100-disk-0 active"
else
	fail "slow activation: exit $rc after ${took}s, vm-100-disk-0 $(lvs --noheadings -o lv_active pve/vm-100-disk-0 | tr -d ' '): $(grep -m2 -i 'killed\|incomplete\|inactive' "$O/activate2.txt")"
fi
grep -q 'past its bound' "$O/activate2.txt" &&
	ok "keel activate said it passed its bound while the command ran" || fail "no word of the bound in keel activate's output"
sed -i '/slow-thin-check/d' /etc/lvm/lvm.conf

# --- 3. the last good desired state ------------------------------------------
rc=0
"$KEEL" activate --timeout 20s >"$O/activate3a.txt" 2>&1 || rc=$?
[ $rc = 0 ] || fail "keel activate on the good desired state: exit $rc: $(tail -3 "$O/activate3a.txt")"
ls -l /var/lib/keel >"$O/statedir.txt" 2>&1
# A typo in a pushed change.
sed -i 's/pvs:/pvz:/' /etc/keel/keel.cue
rc=0
"$KEEL" activate --timeout 20s >"$O/activate3b.txt" 2>&1 || rc=$?
sed 's/^/    /' "$O/activate3b.txt"
if [ $rc = 0 ] && grep -q 'last good desired state' "$O/activate3b.txt"; then
	ok "an invalid desired state: keel activate used the last good one and said so"
else
	fail "an invalid desired state: exit $rc: $(head -3 "$O/activate3b.txt")"
fi
rm -f /var/lib/keel/last-good-desired.txtar
rc=0
"$KEEL" activate --timeout 20s >"$O/activate3c.txt" 2>&1 || rc=$?
sed 's/^/    /' "$O/activate3c.txt"
[ $rc = 2 ] && ok "an invalid desired state and never a good one: keel activate exits 2" ||
	fail "never a good one: exit $rc"
exit $FAILS
