#!/usr/bin/env bash
# A split VDO pool grown to its declared size (vdosplit_test.go), in
# TestGrow's boot: keel creates svg/spool at 4G with its head and tail on
# the NVMe sfast and its slabs on the HDD sslow (vdosplit.cue); the
# declared size is then raised to 5G. keel plan must show the grow as
# keel recommend --grow computes it (slabs on the HDD first, the last
# lvextend on the NVMe), keel apply must run it, and the recovery journal
# must still be on the NVMe afterwards: its blocks, from vdolistmetadata,
# mapped through the _vdata dm table to a device (the method of
# e2e/smoke's TestSplitPoolJournalMoves). The VG is removed at the end, so
# the next scenario's VDO pool has the guest's memory.
# Prints "ok:" / "FAIL:" lines and exits with the number of failures.
set -u
O=$OUT/sizes
mkdir -p "$O"
. "$SHARE/wipelib.sh" # ok, fail, must

CFG=/etc/keel/vdosplit.cue
nv=$(disk sfast)
hd=$(disk sslow)
nvdev=$(lsblk -dno MAJ:MIN "$nv" | tr -d ' ')
hddev=$(lsblk -dno MAJ:MIN "$hd" | tr -d ' ')
mkdir -p /etc/keel
chmod 755 /etc/keel
declare_size() { sed "s|@SIZE@|$1|" "$SHARE/vdosplit.cue" >"$CFG" && chmod 644 "$CFG"; }
# journal: the major:minor holding the recovery journal of svg/spool.
journal() {
	local first last
	read -r first last < <(vdolistmetadata /dev/mapper/svg-spool_vdata 2>/dev/null |
		sed -n 's/^\([0-9]*\) \.\. \([0-9]*\): recovery journal.*/\1 \2/p')
	[ -n "$first" ] || { echo "no-journal"; return; }
	# VDO blocks are 4 KiB, dm sectors 512 bytes.
	dmsetup table svg-spool_vdata | awk -v lo=$((first * 8)) -v hi=$(((last + 1) * 8)) \
		'$3 == "linear" && lo < $1 + $2 && hi > $1 { print $4 }' | sort -u | tr '\n' ' ' | sed 's/ $//'
}
where() { case $1 in "$nvdev") echo "the NVMe" ;; "$hddev") echo "the HDD" ;; *) echo "$1" ;; esac; }
size() { lvs --noheadings --units b --nosuffix -o lv_size svg/spool | tr -d ' '; }
segs() { lvs -a --noheadings --segments -o lv_name,seg_start_pe,seg_size_pe,devices svg | sed 's/^/    /'; }

must pvcreate -q "$nv" "$hd"
must vgcreate -q svg "$nv" "$hd"
declare_size 4G
t0=$(date +%s)
rc=0
out=$("$KEEL" apply -c "$CFG" 2>&1) || rc=$?
echo "    created in $(($(date +%s) - t0))s, apply exit $rc"
[ "$(size)" = $((4 << 30)) ] || { echo "$out" | sed 's/^/    /'; fail "setup: keel apply made no 4G svg/spool"; exit 100; }
segs
j=$(journal)
if [ "$j" = "$nvdev" ]; then
	ok "split: the new pool's recovery journal is on the NVMe"
else
	fail "split: the new pool's recovery journal is on $(where "$j")"
fi

declare_size 5G
"$KEEL" snapshot -o "$O/vdosplit-before.txtar" >/dev/null 2>&1 || fail "keel snapshot"
plan=$("$KEEL" plan -c "$CFG" 2>&1)
echo "$plan" | sed 's/^/    /'
# The grow's lvextend lines: every one names a PV, the last one the NVMe.
ext=$(grep -o 'lvextend [^&]*svg/spool[^&]*' <<<"$plan" | sed 's/ *$//')
last=$(tail -n 1 <<<"$ext")
if grep -q 'vdo\.size' <<<"$plan" && [ -n "$last" ] && [[ "$last" == *sfast* ]] &&
	! grep -v -q -e sfast -e sslow <<<"$ext"; then
	ok "plan: keel plan grows spool on the HDD first and ends on the NVMe"
else
	fail "plan: keel plan shows no split grow of spool ending on the NVMe: '$ext'"
fi
t0=$(date +%s)
rc=0
out=$("$KEEL" apply -c "$CFG" 2>&1) || rc=$?
echo "$out" | sed 's/^/    /'
echo "    grown in $(($(date +%s) - t0))s"
if [ "$(size)" = $((5 << 30)) ]; then
	ok "grow: keel apply grew spool to its declared 5G (apply exit $rc)"
else
	fail "grow: spool is $(($(size) >> 20))M, declared 5G (apply exit $rc)"
fi
segs
j=$(journal)
if [ "$j" = "$nvdev" ]; then
	ok "grow: the recovery journal is still on the NVMe"
else
	fail "grow: the recovery journal moved to $(where "$j")"
fi
chk=$("$KEEL" check -c "$CFG" 2>&1)
# The finding lines only: a remedy may name vdo.size.
if grep -Eq '^ *[A-Z]+ +vdo\.(size|layout)' <<<"$chk"; then
	fail "check: a size or layout finding is left after apply"
	echo "$chk" | grep -E 'vdo\.' | sed 's/^/    /'
else
	ok "check: no vdo.size or vdo.layout finding after apply"
fi
vgremove -ff -y svg >/dev/null 2>&1
exit "$FAILS"
