#!/usr/bin/env bash
# Every change on a VG shared between nodes is held, not only removal, in one
# boot of the test guest with one small disk (serial gate1):
#
# VG sanvg, declared shared: true (a SAN LUN several libvirt hosts see,
# without lvmlockd), holds thin pool tp, which zeroes new chunks; the desired
# state says it should not, and asks for a second pool tpnew. keel check
# reports vg.shared_change on both objects with the commands for the node
# that owns them; keel apply leaves sanvg's metadata seqno and LVs as they
# were. The host then plays the owning node: each printed remedy, typed as
# printed after its "on the node that owns ...:" prefix, makes the change,
# and keel check no longer reports the drift.
#
# Run from the repository root with a static keel binary:
#   CGO_ENABLED=0 go build -o /tmp/keel ./cmd/keel
#   KEEL_E2E_BIN=/tmp/keel go test -tags e2e -run TestSharedVGGate ./e2e/ownership/
# Prints "ok:" / "FAIL:" lines and exits with the number of failures.
set -u
O=$OUT/sharedgate
mkdir -p "$O"
. "$SHARE/wipelib.sh"
LVLIST_FIELDS=vg_name,lv_name,lv_uuid
export LVM_SUPPRESS_FD_WARNINGS=1

d=$(disk gate1) || exit 100
mkdir -p /etc/keel
chmod 755 /etc/keel
install -m 0644 "$SHARE/sharedgate.cue" /etc/keel/sharedgate.cue
CFG=/etc/keel/sharedgate.cue
must pvcreate -q "$d"
must vgcreate -q sanvg "$d"
must lvcreate -q -y -L 64M -Zy -T sanvg/tp
seqno() { vgs --noheadings -o seqno sanvg | tr -d ' '; }

rc=0
checked=$("$KEEL" check -c "$CFG" 2>&1) || rc=$?
echo "$checked" | sed 's/^/    /'
for obj in sanvg/tp sanvg/tpnew; do
	if [ $rc = 1 ] && grep -qE "vg\.shared_change +$obj\$" <<<"$checked"; then
		ok "keel check reports vg.shared_change $obj (rc 1)"
	else
		fail "keel check rc $rc, no vg.shared_change $obj"
	fi
done

before=$(lvlist) seq=$(seqno)
rc=0
out=$("$KEEL" apply -c "$CFG" 2>&1) || rc=$?
echo "$out" | sed 's/^/    /'
if [ "$seq" = "$(seqno)" ] && [ "$before" = "$(lvlist)" ]; then
	ok "keel apply changed nothing in shared sanvg (seqno $seq, LVs)"
else
	fail "keel apply changed shared sanvg: seqno $seq -> $(seqno); $(diff <(echo "$before") <(lvlist) | grep '^[<>]' | tr -s ' \n' ' ')"
fi

# remedy OBJ: the remedy keel check printed for vg.shared_change OBJ, with
# its "on the node that owns OBJ: " prefix cut.
remedy() {
	awk -v obj="$1" '$2 == "vg.shared_change" && $3 == obj { on = 1; next }
		on && $1 == "remedy:" { sub(/^ *remedy: */, ""); print; exit }' <<<"$checked" |
		sed "s|^on the node that owns $1: ||"
}
for obj in sanvg/tp sanvg/tpnew; do
	r=$(remedy "$obj")
	rc=0
	[ -n "$r" ] && { eval "$r" >"$O/remedy.out" 2>&1 || rc=$?; }
	if [ -n "$r" ] && [ $rc = 0 ]; then
		ok "the owning node's remedy for $obj runs as printed: $r"
	else
		fail "remedy for $obj '$r': exit $rc: $(cat "$O/remedy.out" 2>/dev/null)"
	fi
done
rc=0
again=$("$KEEL" check -c "$CFG" 2>&1) || rc=$?
echo "$again" | sed 's/^/    /'
if grep -qE "vg\.shared_change|thin\.zeroing|thin\.missing" <<<"$again"; then
	fail "after the owning node's changes keel check still reports: $(grep -E 'vg\.shared_change|thin\.' <<<"$again" | tr -s ' \n' ' ')"
else
	ok "after the owning node's changes keel check reports no drift in sanvg (rc $rc)"
fi
exit $FAILS
