#!/usr/bin/env bash
# Autoextend within bounds (autoextend_test.go), in TestGrow's boot after
# grow.sh, on its own virtio disk auto1. Thin pool autovg/tp is made by
# hand at 32M (4 MiB extents) with a 256M thin LV;
# the desired state declares autoextend {threshold 70, percent 50,
# maximum 72M}. keel plan must show the LVM profile keel attaches, keel
# apply must write and attach it; then dd fills the thin LV past 70% and
# dmeventd (lvextend --use-policies) must grow tp to 48M, then to 72M;
# keel apply then turns autoextend off (its -off profile, threshold 100)
# and reports autoextend.at_maximum, and a fill to 86% must leave tp at 72M.
# Prints "ok:" / "FAIL:" lines and exits with the number of failures.
set -u
O=$OUT/sizes
mkdir -p "$O"
. "$SHARE/wipelib.sh" # ok, fail, must

CFG=/etc/keel/autoextend.cue
d1=$(disk auto1)
mkdir -p /etc/keel
chmod 755 /etc/keel
cp "$SHARE/autoextend.cue" "$CFG"
chmod 644 "$CFG"
echo "    activation/monitoring: $(lvmconfig --typeconfig full activation/monitoring 2>&1);" \
	"dmeventd: $(pgrep -a dmeventd || echo not running)"
must pvcreate -q "$d1"
must vgcreate -q -s 4M autovg "$d1"
must lvcreate -q -y --type thin-pool -L 32M --chunksize 64K -n tp autovg
must lvcreate -q -y -V 256M -T autovg/tp -n thin1
pool() { lvs --noheadings -o "$1" autovg/tp | tr -d ' '; }
size() { lvs --noheadings --units b --nosuffix -o lv_size autovg/tp | tr -d ' '; }
state() { lvs --noheadings --units m -o lv_size,data_percent,seg_monitor,lv_profile autovg/tp; }
# waitsize BYTES SECONDS: tp reaches BYTES within SECONDS (dmeventd polls
# a pool every 10 s).
waitsize() {
	local i
	for ((i = 0; i < $2; i += 2)); do
		[ "$(size)" -ge "$1" ] && return 0
		sleep 2
	done
	[ "$(size)" -ge "$1" ]
}
# write FROM_MIB COUNT_MIB: allocate thin1's chunks from FROM_MIB on.
write() { must dd if=/dev/zero of=/dev/autovg/thin1 bs=1M seek="$1" count="$2" oflag=direct conv=notrunc status=none; }
echo "    tp: $(state)"
"$KEEL" snapshot -o "$O/autoextend-before.txtar" >/dev/null 2>&1 || fail "keel snapshot"

chk=$("$KEEL" check -c "$CFG" 2>&1)
echo "$chk" | grep -E 'autoextend|config' | sed 's/^/    /'
if grep -q 'autoextend\.policy' <<<"$chk"; then
	ok "check: keel check reports autoextend.policy"
else
	fail "check: keel check reports no autoextend.policy"
fi
plan=$("$KEEL" plan -c "$CFG" 2>&1)
echo "$plan" | sed 's/^/    /'
if grep -q -- '--metadataprofile keel-autovg-tp-t70-p50 autovg/tp' <<<"$plan" && grep -q 'keel-autovg-tp-t70-p50.profile' <<<"$plan"; then
	ok "plan: keel plan shows the profile written and attached"
else
	fail "plan: keel plan shows no profile written and attached"
fi
rc=0
out=$("$KEEL" apply -c "$CFG" 2>&1) || rc=$?
echo "$out" | sed 's/^/    /'
sed 's/^/    | /' /etc/lvm/profile/keel-autovg-tp-t70-p50.profile 2>/dev/null
if [ "$(pool lv_profile)" = keel-autovg-tp-t70-p50 ] && [ -f /etc/lvm/profile/keel-autovg-tp-t70-p50.profile ]; then
	ok "apply: profile keel-autovg-tp-t70-p50 written and attached (apply exit $rc)"
else
	fail "apply: tp has profile '$(pool lv_profile)' (apply exit $rc)"
fi
if [ "$(pool seg_monitor)" = monitored ]; then
	ok "apply: dmeventd monitors tp"
else
	fail "apply: tp is '$(pool seg_monitor)'"
fi

# grows MIB WHAT: tp reaches MIB MiB within 180 s: dmeventd's 10 s poll plus
# lvextend, on a one-vCPU guest that shares the machine with another in CI's
# lanes (a bound on waiting, not a figure; it returns once tp has grown).
grows() {
	if waitsize $(($1 << 20)) 180; then
		ok "grow: dmeventd grew tp $2 $(($(size) >> 20))M"
	else
		fail "grow: tp is $(($(size) >> 20))M at $(pool data_percent)%, not grown to $1M"
	fi
	echo "    tp: $(state)"
}
write 0 26 # 26 of 32 MiB: 81%
grows 48 "past 70% from 32M to"
"$KEEL" apply -c "$CFG" >/dev/null 2>&1
write 26 14 # 40 of 48 MiB: 83%
grows 72 "again to"
"$KEEL" snapshot -o "$O/autoextend-max.txtar" >/dev/null 2>&1 || fail "keel snapshot"
plan=$("$KEEL" plan -c "$CFG" 2>&1)
echo "$plan" | sed 's/^/    /'
# An operator's profile no LV uses, which keel must leave alone.
printf 'activation {\n}\n' >/etc/lvm/profile/ops-spare.profile
rc=0
out=$("$KEEL" apply -c "$CFG" 2>&1) || rc=$?
if [ "$(pool lv_profile)" = keel-autovg-tp-off ]; then
	ok "ceiling: keel attached keel-autovg-tp-off at 72M (apply exit $rc)"
else
	fail "ceiling: tp has profile '$(pool lv_profile)' at $(($(size) >> 20))M (apply exit $rc)"
	echo "$out" | sed 's/^/    /'
fi
# The profile tp used until then is keel's and no LV names it any more:
# the same apply, re-reading the host after the attach, removes it.
if grep -q 'autoextend\.stale_profile:/etc/lvm/profile/keel-autovg-tp-t70-p50\.profile' <<<"$out" &&
	[ ! -e /etc/lvm/profile/keel-autovg-tp-t70-p50.profile ] && [ -f /etc/lvm/profile/keel-autovg-tp-off.profile ] &&
	[ -f /etc/lvm/profile/ops-spare.profile ]; then
	ok "profiles: keel apply removed the superseded keel-autovg-tp-t70-p50 and kept the operator's"
else
	fail "profiles: $(ls /etc/lvm/profile | tr '\n' ' ')after keel apply"
	echo "$out" | sed 's/^/    /'
fi
"$KEEL" snapshot -o "$O/autoextend-off.txtar" >/dev/null 2>&1 || fail "keel snapshot"
chk=$("$KEEL" check -c "$CFG" 2>&1)
if grep -q 'autoextend\.at_maximum' <<<"$chk"; then
	ok "ceiling: keel check reports autoextend.at_maximum"
else
	fail "ceiling: keel check reports no autoextend.at_maximum"
fi
echo "$chk" | grep -A5 'autoextend' | sed 's/^/    /'
write 40 22 # 62 of 72 MiB: 86%
sleep 30
if [ "$(size)" = $((72 << 20)) ]; then
	ok "ceiling: tp stayed at its maximum 72M at $(pool data_percent)% used"
else
	fail "ceiling: tp grew past its maximum to $(($(size) >> 20))M"
fi
echo "    tp: $(state)"
exit "$FAILS"
