#!/usr/bin/env bash
# A deliberate suspend is not undone: an admin (or a backup tool taking an
# array snapshot, or a table swap during recovery) suspends an LV's device
# by hand with dmsetup. keel apply reports it (dm.suspended, critical) and
# leaves it suspended, since the desired state does not opt in to resuming
# (agent.resumeSuspended); the remedy keel prints resumes it when typed.
#
# Run from the repository root with a static keel binary:
#   CGO_ENABLED=0 go build -o /tmp/keel ./cmd/keel
#   e2e/vm-run.sh --keel /tmp/keel --hdd 1G e2e/ownership/suspend.sh e2e/wipe/wipelib.sh
# Prints "ok:" / "FAIL:" lines and exits with the number of failures.
set -u
O=$OUT/suspend
mkdir -p "$O"
. "$SHARE/wipelib.sh"
hd=$(disk hdd1)
mkdir -p /etc/keel /var/lib/keel
chmod 755 /etc/keel
CFG=/etc/keel/suspend.cue
printf 'volumeGroups: vmdata: pvs: ["/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_hdd1"]\n' >"$CFG"
chmod 644 "$CFG"
must pvcreate -q "$hd"
must vgcreate -q vmdata "$hd"
must lvcreate -q -y -L 8M -n vm-100-disk-0 vmdata
dm=vmdata-vm--100--disk--0
suspended() { dmsetup info -c --noheadings -o attr "$dm" | grep -q s; }

must dmsetup suspend "$dm"
rc=0
timeout 120 "$KEEL" apply -c "$CFG" >"$O/apply.txt" 2>&1 || rc=$?
sed 's/^/    /' "$O/apply.txt"
if suspended; then
	ok "keel apply left the device the admin suspended suspended (exit $rc)"
else
	fail "keel apply resumed $dm, which the admin suspended (exit $rc)"
	must dmsetup suspend "$dm"
fi
rc=0
timeout 120 "$KEEL" check -c "$CFG" >"$O/check.txt" 2>&1 || rc=$?
sed 's/^/    /' "$O/check.txt"
if grep -q "^CRITICAL dm.suspended  $dm" "$O/check.txt" && [ "$rc" -eq 1 ] && suspended; then
	ok "keel check reports dm.suspended $dm as critical (exit 1) and changes nothing"
else
	fail "keel check: exit $rc, want 1 and a critical dm.suspended $dm"
fi
# A capture for the planner's tests (KEEL_OWNERSHIP_SNAPSHOT_DIR): the
# device suspended while a dmsetup command waits on it, which keel must
# count as a command on the device's VG.
dmsetup wait "$dm" >/dev/null 2>&1 &
waiter=$!
sleep 1
cp "$CFG" "$O/suspend-busy.cue"
timeout 120 "$KEEL" snapshot -c "$CFG" -o "$O/suspend-busy.txtar" >/dev/null 2>&1 || fail "keel snapshot with the device suspended"
kill "$waiter" 2>/dev/null
wait "$waiter" 2>/dev/null
remedy=$(awk -v dm="$dm" '$2=="dm.suspended" && $3==dm {f=1; next} f && /^ *remedy:/ {sub(/^ *remedy: */, ""); print; exit}' "$O/check.txt")
echo "remedy: $remedy" >"$O/remedy.txt"
if [ -n "$remedy" ] && bash -c "$remedy" && ! suspended; then
	ok "the remedy keel prints resumes $dm when typed"
else
	fail "the remedy \"$remedy\" did not resume $dm"
	dmsetup resume "$dm" 2>/dev/null
fi
exit "$FAILS"
