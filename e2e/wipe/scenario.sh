#!/usr/bin/env bash
# keel wipe in the test guest, in one boot: refusals (nothing changes), a
# discard removal on a VG stacked on VDO (VDO's used blocks drop), a discard
# removal of a thin LV (the pool's data use drops), and a wipe killed midway
# that the next run finishes. Also records two node snapshots for the unit
# tests (out/wipe/).
#
# Run from the repository root with a static keel binary:
#   CGO_ENABLED=0 go build -o /tmp/keel ./cmd/keel
#   e2e/vm-run.sh --keel /tmp/keel --nvme 20G --hdd 4G e2e/wipe/scenario.sh e2e/wipe/wipe.cue
# Prints "ok:" / "FAIL:" lines and exits with the number of failures.
set -u
O=$OUT/wipe
mkdir -p "$O"
versions >"$O/versions.txt" 2>&1
CFG=$SHARE/wipe.cue
. "$SHARE/wipelib.sh"
vdo_used() { vdostats --verbose vdolab-vpool-vpool | awk -F: '/data blocks used/ { gsub(/ /, "", $2); print $2 }'; }
thin_pct() { lvs --noheadings -o data_percent vdolab/tpool | tr -d ' '; }

nv=$(disk nvme0) hd=$(disk hdd1)

# --- setup -----------------------------------------------------------------
must pvcreate -q "$nv"
must vgcreate -q vdolab "$nv"
must lvcreate -q -y --type vdo -n vdolv -L 5G -V 8G --vdosettings index_memory_size_mb=256 vdolab/vpool
printf '\ndevices {\n\tscan_lvs = 1\n}\n' >>/etc/lvm/lvm.conf
must pvcreate -q /dev/vdolab/vdolv
must vgcreate -q vms /dev/vdolab/vdolv
must lvcreate -q -y -L 256M -n vm-100-disk-0 vms
must lvcreate -q -y -L 1G -n big vms
must lvcreate -q -y -L 1G -T -c 64K vdolab/tpool
must lvcreate -q -y -V 256M -T vdolab/tpool -n thin-1
must lvcreate -q -y -L 64M -n openlv vdolab
must lvcreate -q -y -L 64M -n keep vdolab
must lvcreate -q -y -L 64M -n pvlv vdolab
must pvcreate -q /dev/vdolab/pvlv
must pvcreate -q "$hd"
must vgcreate -q other "$hd"
must lvcreate -q -y -L 64M -n data other
must dd if=/dev/urandom of=/dev/vms/vm-100-disk-0 bs=1M count=256 oflag=direct status=none
must dd if=/dev/urandom of=/dev/vdolab/thin-1 bs=1M count=256 oflag=direct status=none
sync
exec 3<>/dev/vdolab/openlv
"$KEEL" snapshot -o "$O/node-setup.txtar" || fail "keel snapshot (setup)"

# --- refusals: rc 1, the LV list unchanged ----------------------------------
refuse() { # refuse WANT ARGS...
	local want=$1 before after out rc
	shift
	before=$(lvlist) || { fail "refusal $*: lvs failed before"; return; }
	out=$("$KEEL" wipe -c "$CFG" "$@" 2>&1)
	rc=$?
	after=$(lvlist) || { fail "refusal $*: lvs failed after"; return; }
	echo "$out" | sed 's/^/    /'
	if [ "$rc" -ne 1 ]; then
		fail "refusal $*: rc $rc, want 1"
	elif ! grep -q -- "$want" <<<"$out"; then
		fail "refusal $*: output lacks '$want'"
	elif [ "$before" != "$after" ]; then
		fail "refusal $*: LVs changed"
		diff <(echo "$before") <(echo "$after")
	else
		ok "refused $* ($want), nothing changed"
	fi
}
refuse "is open" vdolab/openlv
refuse "is a PV" vdolab/pvlv
refuse "is a PV" /dev/vdolab/vdolv
refuse "is a VDO LV" vdolab/vdolv
refuse "is a VDO pool" vdolab/vpool
refuse "is a thin pool" vdolab/tpool
refuse "vg other is not declared" other/data
refuse "not in the absent list of vg vdolab" --absent vdolab/keep
refuse "no such LV" vms/nosuch
# one bad name refuses the whole request
refuse "is open" vms/vm-100-disk-0 vdolab/openlv
exec 3<&-

# --- discard on a VG stacked on VDO ----------------------------------------
u0=$(vdo_used)
lv_blocks=$((256 * 1024 / 4))
out=$(step "$KEEL" wipe -c "$CFG" vms/vm-100-disk-0 2>&1)
rc=$?
echo "$out" | sed 's/^/    /'
u1=$(vdo_used)
echo "    vdo data blocks used: $u0 -> $u1 (LV: $lv_blocks blocks)"
if [ "$rc" -ne 0 ]; then
	fail "wipe vms/vm-100-disk-0: rc $rc"
elif lvs vms/vm-100-disk-0 >/dev/null 2>&1 || lvs vms/del-vm-100-disk-0 >/dev/null 2>&1; then
	fail "vms/vm-100-disk-0 still exists"
elif [ $((u0 - u1)) -lt $((lv_blocks * 95 / 100)) ]; then
	fail "VDO freed $((u0 - u1)) blocks, want at least 95% of $lv_blocks"
else
	ok "discard on VDO: LV gone, VDO freed $((u0 - u1)) of $lv_blocks blocks"
fi
grep -q "max_discard 1" <<<"$out" && ok "warned about max_discard 1" || fail "no max_discard warning"

# --- discard of a thin LV -----------------------------------------------------
p0=$(thin_pct)
out=$(step "$KEEL" wipe -c "$CFG" --absent 2>&1)
rc=$?
echo "$out" | sed 's/^/    /'
p1=$(thin_pct)
echo "    thin pool data percent: $p0 -> $p1"
if [ "$rc" -ne 0 ]; then
	fail "wipe --absent (thin-1): rc $rc"
elif lvs vdolab/thin-1 >/dev/null 2>&1; then
	fail "vdolab/thin-1 still exists"
elif ! awk -v a="$p0" -v b="$p1" 'BEGIN { exit !(a - b >= 20) }'; then
	fail "thin pool data use fell from $p0 to $p1, want at least 20 points"
else
	ok "discard on thin: LV gone, pool data $p0% -> $p1%"
fi

# --- kill mid-wipe, then resume -------------------------------------------------
"$KEEL" wipe -c "$CFG" --mode zeroout --step 1M vms/big >"$O/killed.log" 2>&1 &
pid=$!
for i in $(seq 300); do
	lvs vms/del-big >/dev/null 2>&1 && break
	sleep 0.1
done
sleep 2
if kill -0 "$pid" 2>/dev/null; then
	kill -9 "$pid"
	wait "$pid" 2>/dev/null
	sed 's/^/    /' "$O/killed.log"
	if lvs --noheadings -o lv_name,lv_tags vms/del-big 2>/dev/null | grep -q keel_wipe; then
		ok "killed mid-wipe: vms/del-big left behind with tag keel_wipe"
	else
		fail "after kill: no tagged vms/del-big"
	fi
	"$KEEL" snapshot -o "$O/node-killed.txtar" || fail "keel snapshot (killed)"
	out=$(step "$KEEL" wipe -c "$CFG" 2>&1)
	rc=$?
	echo "$out" | tail -n 5 | sed 's/^/    /'
	if [ "$rc" -eq 0 ] && grep -q "resume vms/del-big" <<<"$out" && ! lvs vms/del-big >/dev/null 2>&1; then
		ok "resumed: vms/del-big finished and removed"
	else
		fail "resume: rc $rc, del-big $(lvs --noheadings -o lv_name vms/del-big 2>&1)"
	fi
else
	wait "$pid"
	fail "keel finished vms/big before it could be killed (rc $?); make the LV larger"
	sed 's/^/    /' "$O/killed.log"
fi

lvlist >"$O/lvs-final.txt"
echo "FAILS=$FAILS"
exit "$FAILS"
