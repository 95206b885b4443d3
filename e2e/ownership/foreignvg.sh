#!/usr/bin/env bash
# A declared VG is known by its PVs and its UUID, not by its name alone, in
# one boot of the test guest with two small disks (serials vgida, vgidb):
#
#  1. foreign: the declared VG vmdata (on vgida) was never there; a VG of
#     the same name made on vgidb (a disk moved from a dead node, a guest's
#     VG made visible) holds vm-101-disk-0, a name the desired state lists
#     as absent, with data. keel check reports vg.foreign; keel apply
#     removes nothing (checksum intact) and creates no thin pool in it; the
#     printed vgrename, typed as printed, moves it out of the way.
#  2. uuid: with a fresh state, vmdata is made on the declared disk and
#     keel check records its vg_uuid; vmdata is then removed and made again
#     on the same disk (a new vg_uuid) with vm-101-disk-0 and data. keel
#     check reports vg.uuid_changed, keel apply removes and creates nothing,
#     and the printed remedy, typed as printed, acknowledges the new VG.
#
# Run from the repository root with a static keel binary:
#   CGO_ENABLED=0 go build -o /tmp/keel ./cmd/keel
#   go test -tags e2e -run TestForeignVG ./e2e/wipe/
# Prints "ok:" / "FAIL:" lines and exits with the number of failures.
set -u
O=$OUT/foreignvg
mkdir -p "$O"
versions >"$O/versions.txt" 2>&1
. "$SHARE/wipelib.sh"
LVLIST_FIELDS=vg_name,lv_name,lv_uuid

da=$(disk vgida)
db=$(disk vgidb)
mkdir -p /etc/keel
chmod 755 /etc/keel
install -m 0644 "$SHARE/foreignvg.cue" /etc/keel/foreignvg.cue
CFG=/etc/keel/foreignvg.cue

# held NAME FINDING: keel check reports FINDING vmdata (its output is left
# in CHECKED for the remedy), keel apply leaves vmdata/vm-101-disk-0 with
# its data and creates no thin pool.
held() {
	local name=$1 id=$2 want out rc=0 before
	want=$(sum vmdata/vm-101-disk-0)
	CHECKED=$("$KEEL" check -c "$CFG" 2>&1) || rc=$?
	echo "$CHECKED" | sed 's/^/    /'
	if [ "$rc" -eq 1 ] && grep -qE "$id +vmdata" <<<"$CHECKED"; then
		ok "$name: keel check reports $id vmdata (rc 1)"
	else
		fail "$name: keel check rc $rc, no $id vmdata"
	fi
	before=$(lvlist)
	rc=0
	out=$("$KEEL" apply -c "$CFG" 2>&1) || rc=$?
	echo "$out" | sed 's/^/    /'
	echo "    keel apply rc $rc"
	if ! exists vmdata/vm-101-disk-0; then
		fail "$name: keel apply removed vmdata/vm-101-disk-0"
	elif [ "$(sum vmdata/vm-101-disk-0)" != "$want" ]; then
		fail "$name: keel apply changed the data of vmdata/vm-101-disk-0"
	elif exists vmdata/tpool; then
		fail "$name: keel apply created thin pool vmdata/tpool"
	elif [ "$before" != "$(lvlist)" ]; then
		fail "$name: keel apply changed the LVs"
		diff <(echo "$before") <(lvlist)
	else
		ok "$name: keel apply kept vmdata/vm-101-disk-0 (checksum intact), created nothing"
	fi
}

# --- 1. foreign -----------------------------------------------------------------
must pvcreate -q "$db"
must vgcreate -q vmdata "$db"
must lvcreate -q -y -L 32M -n vm-101-disk-0 vmdata
fill vmdata/vm-101-disk-0 32
sync
vgs -o vg_name,vg_uuid,pv_name vmdata | sed 's/^/    /'
"$KEEL" snapshot -o "$O/node-foreign.txtar" || fail "keel snapshot (foreign)"
held foreign vg.foreign

# The printed remedy renames the foreign VG out of the way, typed as printed.
want=$(sum vmdata/vm-101-disk-0)
remedy=$(grep -oE "vgrename [A-Za-z0-9-]+ vmdata-other" <<<"$CHECKED" | head -n 1)
rc=0
[ -n "$remedy" ] && { $remedy || rc=$?; }
out=$("$KEEL" check -c "$CFG" 2>&1)
if [ -n "$remedy" ] && [ "$rc" -eq 0 ] && ! grep -q "vg.foreign" <<<"$out" &&
	[ "$(sum vmdata-other/vm-101-disk-0)" = "$want" ]; then
	ok "foreign: remedy '$remedy' renamed it, data intact, vg.foreign gone"
else
	echo "$out" | sed 's/^/    /'
	fail "foreign: remedy '$remedy': rc $rc"
fi

# --- 2. uuid ----------------------------------------------------------------------
must vgremove -q -f vmdata-other
must pvremove -q "$db"
rm -f /var/lib/keel/state.json
must pvcreate -q "$da"
must vgcreate -q vmdata "$da"
u1=$(vgs --noheadings -o vg_uuid vmdata | tr -d ' ')
"$KEEL" check -c "$CFG" >/dev/null 2>&1
if grep -q "$u1" /var/lib/keel/state.json 2>/dev/null; then
	ok "uuid: keel check recorded vmdata's vg_uuid $u1 at first sight"
else
	fail "uuid: keel check did not record vmdata's vg_uuid $u1"
fi
cp /var/lib/keel/state.json "$O/state-uuid.json" 2>/dev/null
must vgremove -q -f vmdata
must vgcreate -q vmdata "$da"
must lvcreate -q -y -L 32M -n vm-101-disk-0 vmdata
fill vmdata/vm-101-disk-0 32
sync
u2=$(vgs --noheadings -o vg_uuid vmdata | tr -d ' ')
echo "    vg_uuid before $u1, now $u2"
"$KEEL" snapshot -o "$O/node-uuid.txtar" || fail "keel snapshot (uuid)"
held uuid vg.uuid_changed

# The printed remedy acknowledges the new VG, typed as printed.
remedy=$(grep -o "keel ack-vg vmdata $u2" <<<"$CHECKED" | head -n 1)
rc=0
[ -n "$remedy" ] && { out=$("$KEEL" ${remedy#keel } 2>&1) || rc=$?; }
echo "$out" | sed 's/^/    /'
rc2=0
out=$("$KEEL" check -c "$CFG" 2>&1) || rc2=$?
if [ -n "$remedy" ] && [ "$rc" -eq 0 ] && ! grep -q "vg.uuid_changed" <<<"$out" && grep -q "$u2" /var/lib/keel/state.json; then
	ok "uuid: remedy '$remedy' acknowledged the new VG"
else
	echo "$out" | sed 's/^/    /'
	fail "uuid: remedy '$remedy': rc $rc, check rc $rc2"
fi

lvlist >"$O/lvs-final.txt"
echo "FAILS=$FAILS"
exit "$FAILS"
