#!/usr/bin/env bash
# VDO autoextend within bounds (vdoauto_test.go), in TestGrow's boot after
# vdosplit.sh, on its own sparse virtio disk vauto. keel creates VDO pool
# avg/vpool at 4G with 128M slabs (vdoauto.cue: threshold 70, percent 1,
# maximum 4228M) and attaches its LVM profile; a fresh pool of this size
# is about two thirds used by VDO's own index and metadata (lvm2's
# test/shell/lvextend-vdo-autoextend.sh fills the same pool past 70% with
# 80 MiB). dd then writes random data until the pool's use passes 70%:
# dmeventd's vdo plugin (daemons/dmeventd/plugins/vdo) must run lvextend
# --use-policies, which grows the pool by one slab in whole extents to
# 4228M, its maximum; keel apply must then attach its -off profile and
# report autoextend.at_maximum, and a second fill past 70% must leave the
# pool at 4228M.
# Prints "ok:" / "FAIL:" lines and exits with the number of failures.
set -u
O=$OUT/sizes
mkdir -p "$O"
. "$SHARE/wipelib.sh" # ok, fail, must

CFG=/etc/keel/vdoauto.cue
d=$(disk vauto)
mkdir -p /etc/keel
chmod 755 /etc/keel
cp "$SHARE/vdoauto.cue" "$CFG"
chmod 644 "$CFG"
pool() { lvs --noheadings -o "$1" avg/vpool | tr -d ' '; }
size() { lvs --noheadings --units b --nosuffix -o lv_size avg/vpool | tr -d ' '; }
state() { lvs --noheadings --units m -o lv_size,data_percent,seg_monitor,lv_profile avg/vpool; }
# vdo: "USED TOTAL" physical blocks from the VDO target's status.
vdo() { dmsetup status avg-vpool-vpool | awk '{ print $9, $10 }'; }
at=0 # MiB written so far to vlv
# fill PCT: random data into vlv until the pool's use passes PCT percent
# (VDO neither dedupes nor compresses it), plus 8 MiB for its metadata.
fill() {
	local used total need
	read -r used total < <(vdo)
	need=$(((total * $1 / 100 - used) * 4096 / 1048576 + 8))
	[ "$need" -gt 0 ] || need=8
	must dd if=/dev/urandom of=/dev/avg/vlv bs=1M seek="$at" count="$need" oflag=direct conv=notrunc status=none
	at=$((at + need))
	echo "    wrote $need MiB: $(state)"
}
waitsize() {
	local i
	for ((i = 0; i < $2; i += 2)); do
		[ "$(size)" -ge "$1" ] && return 0
		sleep 2
	done
	[ "$(size)" -ge "$1" ]
}

must pvcreate -q "$d"
must vgcreate -q -s 4M avg "$d"
t0=$(date +%s)
rc=0
out=$("$KEEL" apply -c "$CFG" 2>&1) || rc=$?
echo "$out" | sed 's/^/    /'
echo "    created in $(($(date +%s) - t0))s; vpool: $(state)"
[ "$(size)" = $((4 << 30)) ] || { fail "setup: keel apply made no 4G avg/vpool (exit $rc)"; exit 100; }
# keel apply re-reads the host after creating the pool, and the same run
# writes and attaches its profile.
if [ "$(pool lv_profile)" = keel-avg-vpool-t70-p1 ] && [ -f /etc/lvm/profile/keel-avg-vpool-t70-p1.profile ]; then
	ok "apply: profile keel-avg-vpool-t70-p1 written and attached"
else
	fail "apply: vpool has profile '$(pool lv_profile)'"
fi
sed 's/^/    | /' /etc/lvm/profile/keel-avg-vpool-t70-p1.profile 2>/dev/null
if [ "$(pool seg_monitor)" = monitored ]; then
	ok "apply: dmeventd monitors vpool"
else
	fail "apply: vpool is '$(pool seg_monitor)'"
fi
fill 70
# dmeventd polls a pool every 10 s; 180 s bounds the wait on a loaded
# one-vCPU guest and returns once vpool has grown.
if waitsize $((4228 << 20)) 180; then
	ok "grow: dmeventd grew vpool past 70% from 4G to $(($(size) >> 20))M"
else
	fail "grow: vpool is $(($(size) >> 20))M at $(pool data_percent)%, not grown to 4228M"
fi
echo "    vpool: $(state)"
"$KEEL" snapshot -o "$O/vdoauto-max.txtar" >/dev/null 2>&1 || fail "keel snapshot"
rc=0
out=$("$KEEL" apply -c "$CFG" 2>&1) || rc=$?
if [ "$(pool lv_profile)" = keel-avg-vpool-off ]; then
	ok "ceiling: keel attached keel-avg-vpool-off at 4228M"
else
	fail "ceiling: vpool has profile '$(pool lv_profile)' at $(($(size) >> 20))M (apply exit $rc)"
	echo "$out" | sed 's/^/    /'
fi
chk=$("$KEEL" check -c "$CFG" 2>&1)
if grep -q 'autoextend\.at_maximum' <<<"$chk"; then
	ok "ceiling: keel check reports autoextend.at_maximum"
else
	fail "ceiling: keel check reports no autoextend.at_maximum"
fi
echo "$chk" | grep -A5 'autoextend' | sed 's/^/    /'
fill 72
# Two of dmeventd's 10 s polls: the plugin runs lvextend --use-policies
# once the use rises past 70% again, and the -off profile makes it a no-op.
sleep 20
if [ "$(size)" = $((4228 << 20)) ]; then
	ok "ceiling: vpool stayed at its maximum 4228M at $(pool data_percent)% used"
else
	fail "ceiling: vpool grew past its maximum to $(($(size) >> 20))M"
fi
echo "    vpool: $(state)"
vgremove -ff -y avg >/dev/null 2>&1
exit "$FAILS"
