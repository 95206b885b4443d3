#!/usr/bin/env bash
# Removal that can never destroy the wrong data, in one boot of the test guest:
#
#  1. identity: keel apply removes vms vm-101-disk-0 (declared absent); a NEW
#     vm-101-disk-0 with data is created (Proxmox VE reuses VM ids) and a new
#     keel process applies again: the new disk is kept, its checksum intact,
#     and lv.absent_reappeared is reported. The same for vm-103-disk-0, a name
#     keel saw in absent before any LV of that name existed. The printed
#     remedy (keel wipe VG/LV by hand) then removes it.
#  2. dependents: an LV holding a PV label LVM does not list (scan_lvs=0), a
#     snapshot origin and a thin external origin are each refused by name,
#     and nothing changes (LV list and data checksums).
#  3. keel wipe refuses a desired state writable by others, like apply.
#  4. a removal that failed (the disk returned EIO in the middle) is not run
#     again by a new keel process, even once the disk is healthy: it is
#     reported stuck with the removal by hand as its remedy, and that remedy,
#     typed as printed, finishes it.
#
# Run from the repository root with a static keel binary:
#   CGO_ENABLED=0 go build -o /tmp/keel ./cmd/keel
#   e2e/vm-run.sh --keel /tmp/keel --hdd 4G e2e/wipe/reuse.sh e2e/wipe/reuse.cue e2e/wipe/failed.cue
# Prints "ok:" / "FAIL:" lines and exits with the number of failures.
set -u
O=$OUT/reuse
mkdir -p "$O"
versions >"$O/versions.txt" 2>&1
. "$SHARE/wipelib.sh"
LVLIST_FIELDS=vg_name,lv_name,lv_uuid,lv_tags

hd=$(disk hdd1)
# The desired state lives where keel looks by default (/etc/keel), owned by
# root and not writable by others, so the printed remedies work as typed.
mkdir -p /etc/keel
chmod 755 /etc/keel
install -m 0644 "$SHARE/reuse.cue" /etc/keel/reuse.cue
CFG=/etc/keel/reuse.cue

must pvcreate -q "$hd"
must vgcreate -q vmdata "$hd"

# --- 1. identity --------------------------------------------------------------
must lvcreate -q -y -L 32M -n vm-101-disk-0 vmdata
fill vmdata/vm-101-disk-0 32
old_uuid=$(lvs --noheadings -o lv_uuid vmdata/vm-101-disk-0 | tr -d ' ')
out=$(step "$KEEL" apply -c "$CFG" 2>&1)
echo "$out" | sed 's/^/    /'
if exists vmdata/vm-101-disk-0 || exists vmdata/del-vm-101-disk-0; then
	fail "first apply left vmdata/vm-101-disk-0"
else
	ok "first apply removed vmdata/vm-101-disk-0 (uuid $old_uuid)"
fi
# The state file is what lets the next keel process tell a new LV from the
# one it removed: the checks below mean nothing without it.
cp /var/lib/keel/state.json "$O/state-1.json" || fail "no /var/lib/keel/state.json after the first removal"

# A new disk under the same name, and one under a name keel already had in
# absent before it existed. lv_time has one-second resolution.
sleep 1.1
must lvcreate -q -y -L 32M -n vm-101-disk-0 vmdata
fill vmdata/vm-101-disk-0 32
must lvcreate -q -y -L 32M -n vm-103-disk-0 vmdata
fill vmdata/vm-103-disk-0 32
sync
s101=$(sum vmdata/vm-101-disk-0) s103=$(sum vmdata/vm-103-disk-0)
lvs -o lv_name,lv_uuid,lv_time vmdata | sed 's/^/    /'

# A new keel process: only the persisted state remembers the first removal.
rc=0
out=$("$KEEL" apply -c "$CFG" 2>&1) || rc=$?
echo "$out" | sed 's/^/    /'
echo "    keel apply rc $rc"
for lv in vm-101-disk-0:$s101 vm-103-disk-0:$s103; do
	name=${lv%%:*} want=${lv#*:}
	if ! exists "vmdata/$name"; then
		fail "second apply removed the new vmdata/$name"
	elif [ "$(sum "vmdata/$name")" != "$want" ]; then
		fail "second apply changed the data of vmdata/$name"
	elif ! grep -q "lv.absent_reappeared vmdata/$name" <<<"$out"; then
		fail "second apply kept vmdata/$name but did not report lv.absent_reappeared"
	else
		ok "new vmdata/$name kept, checksum intact, lv.absent_reappeared reported"
	fi
done
[ "$rc" -eq 1 ] && ok "second apply exits 1 (a warning remains)" || fail "second apply rc $rc, want 1"

# The daemon's rule from the command line refuses it too.
before=$(lvlist)
rc=0
out=$("$KEEL" wipe --absent vmdata/vm-101-disk-0 2>&1) || rc=$?
echo "$out" | sed 's/^/    /'
if [ "$rc" -eq 1 ] && [ "$before" = "$(lvlist)" ] && grep -q "reappeared\|not the LV" <<<"$out"; then
	ok "keel wipe --absent refuses the reappeared vmdata/vm-101-disk-0, nothing changed"
else
	fail "keel wipe --absent vmdata/vm-101-disk-0: rc $rc"
fi

# The printed remedy, typed as printed: keel wipe VG/LV by hand.
rc=0
out=$("$KEEL" wipe vmdata/vm-103-disk-0 2>&1) || rc=$?
echo "$out" | tail -n 3 | sed 's/^/    /'
if [ "$rc" -eq 0 ] && ! exists vmdata/vm-103-disk-0; then
	ok "remedy 'keel wipe vmdata/vm-103-disk-0' removed it"
else
	fail "remedy keel wipe vmdata/vm-103-disk-0: rc $rc"
fi
cp /var/lib/keel/state.json "$O/state-2.json" || fail "no /var/lib/keel/state.json after the remedy"

# --- 2. dependents ----------------------------------------------------------------
refuse() { # refuse WANT LV: keel wipe by hand exits 1, says WANT, changes nothing
	local want=$1 lv=$2 before after out rc=0 s0
	s0=$(sum "$lv" 2>/dev/null)
	before=$(lvlist)
	out=$("$KEEL" wipe -c "$CFG" "$lv" 2>&1) || rc=$?
	after=$(lvlist)
	echo "$out" | sed 's/^/    /'
	if [ "$rc" -ne 1 ]; then
		fail "refusal $lv: rc $rc, want 1"
	elif ! grep -q -- "$want" <<<"$out"; then
		fail "refusal $lv: output lacks '$want'"
	elif [ "$before" != "$after" ]; then
		fail "refusal $lv: LVs changed"
		diff <(echo "$before") <(echo "$after")
	elif [ -n "$s0" ] && [ "$(sum "$lv")" != "$s0" ]; then
		fail "refusal $lv: data changed"
	else
		ok "refused $lv ($want), nothing changed"
	fi
}
# A PV of another VG on an LV, invisible to LVM here (scan_lvs=0 is the
# default): only its content says something lives on it.
must lvcreate -q -y -L 32M -n pvhold vmdata
must pvcreate -q --config 'devices { scan_lvs = 1 }' /dev/vmdata/pvhold
must vgcreate -q --config 'devices { scan_lvs = 1 }' upper /dev/vmdata/pvhold
must vgchange -q -an --config 'devices { scan_lvs = 1 }' upper
pvs 2>&1 | sed 's/^/    pvs: /'
refuse "LVM2_member" vmdata/pvhold
vgs --config 'devices { scan_lvs = 1 }' upper >/dev/null 2>&1 && ok "vg upper still on vmdata/pvhold" || fail "vg upper is gone"

# A snapshot origin: lvremove would take the snapshot along.
must lvcreate -q -y -L 32M -n origin vmdata
fill vmdata/origin 8
must lvcreate -q -y -s -L 16M -n origin-snap vmdata/origin
refuse "origin of snapshot" vmdata/origin

# A thin external origin: read-only, read by the thin LVs made from it.
must lvcreate -q -y -L 32M -n extorig vmdata
fill vmdata/extorig 8
must lvchange -q -an vmdata/extorig
must lvchange -q -pr vmdata/extorig
must lvcreate -q -y -L 64M -T vmdata/tpool
must lvcreate -q -y -s --thinpool vmdata/tpool vmdata/extorig -n extthin
must lvchange -q -an vmdata/extthin
lvs -a -o lv_name,lv_attr,origin,lv_role vmdata | sed 's/^/    /'
refuse "external origin" vmdata/extorig

# A file system is the content of a VM disk, which removal is asked to
# destroy: not refused (docs/removal.md, "Dependents").
must lvcreate -q -y -L 32M -n fsdisk vmdata
must mkfs.ext4 -q /dev/vmdata/fsdisk
blkid -p -o export /dev/vmdata/fsdisk >"$O/blkid-fsdisk.txt" 2>&1
blkid -p -o export /dev/vmdata/pvhold >"$O/blkid-pvhold.txt" 2>&1
"$KEEL" snapshot -o "$O/node-deps.txtar" || fail "keel snapshot (dependents)"
rc=0
out=$("$KEEL" wipe -c "$CFG" vmdata/fsdisk 2>&1) || rc=$?
echo "$out" | tail -n 3 | sed 's/^/    /'
if [ "$rc" -eq 0 ] && ! exists vmdata/fsdisk; then
	ok "an LV holding an ext4 file system is removed (content, not a layer)"
else
	fail "keel wipe vmdata/fsdisk: rc $rc"
fi

# --- 3. ownership -------------------------------------------------------------------
mkdir -p /tmp/loose
install -m 0666 "$CFG" /tmp/loose/reuse.cue
must lvcreate -q -y -L 16M -n keep vmdata
before=$(lvlist)
rc=0
out=$("$KEEL" wipe -c /tmp/loose/reuse.cue vmdata/keep 2>&1) || rc=$?
echo "$out" | sed 's/^/    /'
if [ "$rc" -eq 2 ] && [ "$before" = "$(lvlist)" ] && grep -q "writable by group or others" <<<"$out"; then
	ok "keel wipe refuses a desired state writable by others, nothing changed"
else
	fail "keel wipe with a mode 0666 desired state: rc $rc"
	diff <(echo "$before") <(lvlist)
fi

# --- 4. a failed removal is never run again by the loop --------------------------
# errvg sits on keelerr, a device-mapper device over an LV of vmdata whose
# table can swap an error target into the middle, as a failing disk does
# (lvm2's test suite does the same with its error_dev helper).
install -m 0644 "$SHARE/failed.cue" /etc/keel/failed.cue
FCFG=/etc/keel/failed.cue
must lvcreate -q -y -L 96M -n errback vmdata
eb=/dev/vmdata/errback
n=$(blockdev --getsz "$eb")
must dmsetup create keelerr --table "0 $n linear $eb 0"
must pvcreate -q /dev/mapper/keelerr
must vgcreate -q errvg /dev/mapper/keelerr
must lvcreate -q -y -L 64M -n vm-105-disk-0 errvg
fill errvg/vm-105-disk-0 64
sync
# The LV's first extent starts at pe_start; its bytes 16M..32M turn to errors.
pe=$(pvs --noheadings --units s --nosuffix -o pe_start /dev/mapper/keelerr | tr -d ' ')
e0=$((pe + 32768)) e1=$((pe + 65536))
tail32() { dd if="$1" bs=1M skip=32 count=32 iflag=direct status=none | sha256sum | cut -d' ' -f1; }
t0=$(tail32 /dev/errvg/vm-105-disk-0)
must dmsetup suspend keelerr
must dmsetup load keelerr --table "0 $e0 linear $eb 0
$e0 $((e1 - e0)) error
$e1 $((n - e1)) linear $eb $e1"
must dmsetup resume keelerr
rc=0
out=$("$KEEL" apply -c "$FCFG" 2>&1) || rc=$?
echo "$out" | sed 's/^/    /'
echo "    keel apply rc $rc"
cp /var/lib/keel/state.json "$O/state-failed.json" 2>/dev/null
if grep -q '"failed": ".*' /var/lib/keel/state.json 2>/dev/null && [ "$rc" -ne 0 ]; then
	ok "the removal of errvg/vm-105-disk-0 failed on EIO and its failure is recorded"
else
	fail "first apply on the failing disk: rc $rc, no failed record in state.json"
fi
# The disk is healthy again; a new keel process (a restart) must not run it.
must dmsetup suspend keelerr
must dmsetup load keelerr --table "0 $n linear $eb 0"
must dmsetup resume keelerr
lv=errvg/del-vm-105-disk-0
exists "$lv" || lv=errvg/vm-105-disk-0
rc=0
out=$("$KEEL" apply -c "$FCFG" 2>&1) || rc=$?
echo "$out" | sed 's/^/    /'
echo "    keel apply rc $rc"
remedy=$(grep -o 'keel wipe errvg/vm-105-disk-0' <<<"$out" | head -n 1)
if ! exists "$lv"; then
	fail "a new keel process ran the failed removal of errvg/vm-105-disk-0 again"
elif [ "$(tail32 "/dev/$lv")" != "$t0" ]; then
	fail "a new keel process changed the data of $lv"
elif [ "$rc" -ne 1 ] || ! grep -q "reconcile.stuck errvg/vm-105-disk-0" <<<"$out" || [ -z "$remedy" ]; then
	fail "second apply: rc $rc, want 1 with reconcile.stuck and the remedy keel wipe errvg/vm-105-disk-0"
else
	ok "a new keel process did not run the failed removal again ($lv kept, data intact), reported it stuck"
fi
# The printed remedy, typed as printed.
rc=0
out=$("$KEEL" ${remedy#keel } 2>&1) || rc=$?
echo "$out" | tail -n 3 | sed 's/^/    /'
if [ -n "$remedy" ] && [ "$rc" -eq 0 ] && ! exists errvg/vm-105-disk-0 && ! exists errvg/del-vm-105-disk-0; then
	ok "remedy '$remedy' finished the removal"
else
	fail "remedy '$remedy': rc $rc"
fi
rc=0
out=$("$KEEL" apply -c "$FCFG" 2>&1) || rc=$?
if [ "$rc" -eq 0 ] && ! grep -q 'lv.absent:errvg' /var/lib/keel/state.json; then
	ok "converged afterwards, the record of the finished removal dropped"
else
	echo "$out" | sed 's/^/    /'
	fail "apply after the remedy: rc $rc"
fi

lvlist >"$O/lvs-final.txt"
echo "FAILS=$FAILS"
exit "$FAILS"
