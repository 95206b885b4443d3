#!/usr/bin/env bash
# The audit-first rollout of docs/operations.md with a reused VM id, and
# pinned absent entries, in one boot of the test guest:
#
#  1. vmdata/vm-105-disk-0 (data) is declared absent with agent mode audit.
#     With /var/lib/keel read-only, keel check still judges (exit 1, not 2)
#     and says the first sight could not be recorded (state.unrecorded);
#     keel apply then removes nothing under the unrecorded name.
#  2. The audit entry points (keel check, keel plan, keel apply --dry-run,
#     keel run in audit mode) each record the first sight of the absent
#     name, change nothing else, and check and plan print the LV's uuid.
#  3. The old disk is removed by hand and a NEW vm-105-disk-0 with new data
#     is created (Proxmox VE hands out the lowest free VM id). At the switch
#     to converge, keel apply keeps it, checksum intact, and reports
#     lv.absent_reappeared: its first sight dates from the audit week.
#  4. Pinning: with keel's state lost, absent entries that pin an lv_uuid
#     remove the LV of that uuid (the new vm-105-disk-0, after the operator
#     read its uuid in keel plan) and keep another LV under a pinned name
#     (vm-106-disk-0, recreated after its entry was written).
#
# Run from the repository root with a static keel binary:
#   CGO_ENABLED=0 go build -o /tmp/keel ./cmd/keel
#   e2e/vm-run.sh --keel /tmp/keel --hdd 1G e2e/ownership/rollout.sh e2e/wipe/wipelib.sh
# Prints "ok:" / "FAIL:" lines and exits with the number of failures.
set -u
O=$OUT/rollout
mkdir -p "$O"
versions >"$O/versions.txt" 2>&1
. "$SHARE/wipelib.sh"
LVLIST_FIELDS=vg_name,lv_name,lv_uuid
uuid() { lvs --noheadings -o lv_uuid "$1" | tr -d ' '; }
ST=/var/lib/keel/state.json
# kept LV SUM OUT WHAT: LV exists with checksum SUM and OUT (keel's output)
# reports lv.absent_reappeared for it; "ok: LV WHAT" or a FAIL saying which.
kept() {
	if ! exists "$1"; then
		fail "$1 was removed"
	elif [ "$(sum "$1")" != "$2" ]; then
		fail "the data of $1 changed"
	elif ! grep -q "lv.absent_reappeared $1" <<<"$3"; then
		fail "$1 kept but lv.absent_reappeared not reported"
	else
		ok "$1 $4"
	fi
}
# recorded: keel's state holds a first sight of vmdata/vm-105-disk-0.
recorded() { grep -q '"vmdata/vm-105-disk-0"' "$ST" 2>/dev/null; }

hd=$(disk hdd1)
mkdir -p /etc/keel /var/lib/keel
chmod 755 /etc/keel
CFG=/etc/keel/rollout.cue
# desired MODE ENTRIES: the desired state, vmdata with the absent ENTRIES.
desired() {
	printf 'volumeGroups: vmdata: {\n\tpvs: ["/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_hdd1"]\n\tabsent: [%s]\n}\nagent: mode: "%s"\n' "$2" "$1" >"$CFG"
	chmod 644 "$CFG"
}
desired audit '"vm-105-disk-0"'

must pvcreate -q "$hd"
must vgcreate -q vmdata "$hd"
must lvcreate -q -y -L 16M -n vm-105-disk-0 vmdata
fill vmdata/vm-105-disk-0 16
must lvcreate -q -y -L 16M -n vm-106-disk-0 vmdata
fill vmdata/vm-106-disk-0 16
sync
old=$(uuid vmdata/vm-105-disk-0) p106=$(uuid vmdata/vm-106-disk-0)
s105=$(sum vmdata/vm-105-disk-0)

# --- 1. keel's state cannot be written --------------------------------------
must mount -t tmpfs -o ro,size=1m keelro /var/lib/keel
rc=0
out=$("$KEEL" check -c "$CFG" 2>&1) || rc=$?
echo "$out" | sed 's/^/    /'
if [ "$rc" -eq 1 ] && grep -q "state.unrecorded" <<<"$out"; then
	ok "keel check with a read-only /var/lib/keel exits 1 (not 2) and reports state.unrecorded"
else
	fail "keel check with a read-only /var/lib/keel: rc $rc, want 1 and state.unrecorded"
fi
rc=0
out=$("$KEEL" apply -c "$CFG" 2>&1) || rc=$?
echo "$out" | sed 's/^/    /'
if exists vmdata/vm-105-disk-0 && [ "$(sum vmdata/vm-105-disk-0)" = "$s105" ]; then
	ok "keel apply with a read-only /var/lib/keel removes nothing under the unrecorded name"
else
	fail "keel apply with a read-only /var/lib/keel removed vmdata/vm-105-disk-0 (rc $rc)"
fi
must umount /var/lib/keel

# --- 2. the audit week: every entry point records the first sight ----------------
before=$(lvlist)
for how in check plan "apply --dry-run" run; do
	rm -f "$ST"
	rc=0
	if [ "$how" = run ]; then
		# agent.mode "audit" in the desired state; stopped after its first pass.
		"$KEEL" run -c "$CFG" --poll 0 >"$O/run.log" 2>&1 &
		pid=$!
		for _ in $(seq 120); do
			grep -q "pass done" "$O/run.log" && break
			sleep 0.5
		done
		kill "$pid"
		wait "$pid" || rc=$?
		out=$(grep -m1 "pass done" "$O/run.log")
	else
		out=$("$KEEL" $how -c "$CFG" 2>&1) || rc=$?
	fi
	echo "$out" | sed "s/^/    $how: /"
	[ "$how" = check ] && chk=$out
	[ "$how" = plan ] && pln=$out
	label=$how
	[ "$how" = run ] && label="run (agent mode audit)"
	if recorded; then
		ok "keel $label recorded the first sight of vmdata/vm-105-disk-0"
	else
		fail "keel $how (rc $rc) recorded no first sight of vmdata/vm-105-disk-0"
	fi
done
if grep -q "$old" <<<"$chk" && grep -q "$old" <<<"$pln"; then
	ok "keel check and keel plan print the uuid of the LV under vmdata/vm-105-disk-0"
else
	fail "keel check or keel plan does not print uuid $old of vmdata/vm-105-disk-0"
fi
if [ "$before" = "$(lvlist)" ] && [ "$(sum vmdata/vm-105-disk-0)" = "$s105" ]; then
	ok "the audit week changed nothing (LV list and checksum)"
else
	fail "the audit week changed the LVs"
fi

# --- 3. a reused VM id, then the switch to converge -------------------------------
must lvremove -q -y vmdata/vm-105-disk-0
sleep 1.1 # lv_time has one-second resolution
must lvcreate -q -y -L 16M -n vm-105-disk-0 vmdata
fill vmdata/vm-105-disk-0 16
sync
new=$(uuid vmdata/vm-105-disk-0) snew=$(sum vmdata/vm-105-disk-0)
lvs -o lv_name,lv_uuid,lv_time vmdata | sed 's/^/    /'
desired converge '"vm-105-disk-0"'
rc=0
out=$("$KEEL" apply -c "$CFG" 2>&1) || rc=$?
echo "$out" | sed 's/^/    /'
echo "    keel apply rc $rc"
kept vmdata/vm-105-disk-0 "$snew" "$out" "(a reused VM id, new) kept at the switch to converge, checksum intact, lv.absent_reappeared reported"

# --- 4. pinned entries, keel's state lost ----------------------------------------
must lvremove -q -y vmdata/vm-106-disk-0
must lvcreate -q -y -L 16M -n vm-106-disk-0 vmdata
fill vmdata/vm-106-disk-0 16
sync
q106=$(uuid vmdata/vm-106-disk-0) s106=$(sum vmdata/vm-106-disk-0)
rm -f "$ST"
desired converge "{name: \"vm-105-disk-0\", uuid: \"$new\"}, {name: \"vm-106-disk-0\", uuid: \"$p106\"}"
sed 's/^/    cue: /' "$CFG"
exists vmdata/vm-105-disk-0 && had105=1 || had105=0
rc=0
out=$("$KEEL" plan -c "$CFG" 2>&1) || rc=$?
echo "$out" | sed 's/^/    /'
if [ "$rc" -eq 0 ] && grep -q "$new" <<<"$out" && grep -q "$q106" <<<"$out"; then
	ok "keel plan prints the uuid of each LV under a pinned absent name"
else
	fail "keel plan (rc $rc) does not print uuids $new and $q106"
fi
rc=0
out=$("$KEEL" apply -c "$CFG" 2>&1) || rc=$?
echo "$out" | sed 's/^/    /'
echo "    keel apply rc $rc"
if [ "$had105" -eq 0 ]; then
	fail "vmdata/vm-105-disk-0 was gone before the pinned entry was applied"
elif exists vmdata/vm-105-disk-0 || exists vmdata/del-vm-105-disk-0; then
	fail "the pinned vmdata/vm-105-disk-0 (uuid $new) was not removed"
else
	ok "pinned vmdata/vm-105-disk-0 removed (the LV of the pinned uuid)"
fi
kept vmdata/vm-106-disk-0 "$s106" "$out" "of another uuid kept under its pinned entry, checksum intact, lv.absent_reappeared reported"

lvlist >"$O/lvs-final.txt"
echo "FAILS=$FAILS"
exit "$FAILS"
