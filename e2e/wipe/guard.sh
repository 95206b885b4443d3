#!/usr/bin/env bash
# The removal guards of keel wipe in the test guest, in one boot:
#   - a VG behind a Proxmox storage.cfg entry with "shared 1" is refused and
#     its inactive LV is neither activated nor changed;
#   - an LV that a process opens with plain O_RDWR (as qemu does) after
#     keel's probe, here right after the rename, is refused before the first
#     write, named back and unchanged;
#   - a thick LV on a VG stacked on a thin LV is not zero-filled when the
#     fill could allocate in the thin pool below;
#   - a thin LV larger than its pool's free space, with data, removed through
#     absent: the pool's data use goes down, another thin LV is intact; the
#     removal from the pool with zeroing off is held with a finding whose
#     remedy works when typed, and then goes through;
#   - a Proxmox VE 9 qcow2 volume chain (snapshot-as-volume-chain on thick
#     LVM) is removed whole or not at all: a snapshot link alone and the
#     head alone are refused, both declared absent are removed.
# Also records a node snapshot for the host tests (out/guard/).
#
# Run from the repository root with a static keel binary:
#   CGO_ENABLED=0 go build -o /tmp/keel ./cmd/keel
#   e2e/vm-run.sh --keel /tmp/keel --nvme 8G --hdd 1G e2e/wipe/guard.sh \
#       e2e/wipe/guard.cue e2e/wipe/thin.cue
# Prints "ok:" / "FAIL:" lines and exits with the number of failures.
set -u
O=$OUT/guard
mkdir -p "$O"
CFG=$SHARE/guard.cue
. "$SHARE/wipelib.sh"
pct() { lvs --noheadings -o data_percent "$1" | tr -d ' '; }
md5() { md5sum <"$1" | cut -d' ' -f1; }
# higher A B: A > B as decimal numbers
higher() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 > b + 0) }'; }

nv=$(disk nvme0) hd=$(disk hdd1)

# --- setup -----------------------------------------------------------------
printf '\ndevices {\n\tscan_lvs = 1\n}\n' >>/etc/lvm/lvm.conf
must pvcreate -q "$nv"
must vgcreate -q tvg "$nv"
# A pool with zeroing on (LVM's default) holding a thin LV three times the
# pool's size, and one with zeroing off. --errorwhenfull y makes a full pool
# fail writes at once instead of queueing them for 60 s.
must lvcreate -q -y -L 1G -T -c 64K -Z y --errorwhenfull y tvg/pool
must lvcreate -q -y -V 3G -T tvg/pool -n vm-102-disk-0
must lvcreate -q -y -V 256M -T tvg/pool -n keep
must lvcreate -q -y -L 256M -T -c 64K -Z n --errorwhenfull y tvg/pooln
must lvcreate -q -y -V 128M -T tvg/pooln -n vm-103-disk-0
# Absent in guard.cue but not removed here: keel check names it after the
# remedy (lv.absent, no longer held).
must lvcreate -q -y -V 16M -T tvg/pooln -n vm-104-disk-0
must dd if=/dev/urandom of=/dev/tvg/vm-102-disk-0 bs=1M count=128 oflag=direct status=none
must dd if=/dev/urandom of=/dev/tvg/keep bs=1M count=64 oflag=direct status=none
must dd if=/dev/urandom of=/dev/tvg/vm-103-disk-0 bs=1M count=32 oflag=direct status=none
# A VG on a thin LV (a guest's VG, or a storage stacked on thin).
must lvcreate -q -y -L 384M -T -c 64K --errorwhenfull y tvg/gpool
must lvcreate -q -y -V 1G -T tvg/gpool -n gpv
must pvcreate -q /dev/tvg/gpv
must vgcreate -q gvg /dev/tvg/gpv
must lvcreate -q -y -L 512M -n old gvg
must dd if=/dev/urandom of=/dev/gvg/old bs=1M count=16 oflag=direct status=none
# A plain LV that a "VM" opens between keel's probe and its first write.
must lvcreate -q -y -L 64M -n held tvg
must dd if=/dev/urandom of=/dev/tvg/held bs=1M count=64 oflag=direct status=none
# A VG of a Proxmox storage shared between nodes; the disk is inactive here
# (the VM runs on another node).
must pvcreate -q "$hd"
must vgcreate -q svg "$hd"
must lvcreate -q -y -L 64M -n vm-200-disk-0 svg
must dd if=/dev/urandom of=/dev/svg/vm-200-disk-0 bs=1M count=64 oflag=direct status=none
must lvchange -q -an svg/vm-200-disk-0
mkdir -p /etc/pve
# A VM disk of a Proxmox VE 9 storage with snapshot-as-volume-chain, with one
# snapshot, made as pve-storage's LVMPlugin makes it: alloc_lvm_image's
# lvcreate (tags pve-vm-VMID and the volume name), volume_snapshot's rename
# of the current volume to snap_<volume>_<snap>.qcow2, then a new current
# volume of the same name (whose qcow2 header names the snapshot as its
# backing file; the guest has no qemu-img, and keel judges by names).
chain_lv() { must lvcreate -q -aly -Wy --yes -L 16M -n vm-105-disk-0.qcow2 --setautoactivation n \
	--addtag pve-vm-105 --addtag @pve-vm-105-disk-0.qcow2 tvg; }
chain_lv
fill tvg/vm-105-disk-0.qcow2 16
must lvrename -q tvg vm-105-disk-0.qcow2 snap_vm-105-disk-0_s1.qcow2
chain_lv
fill tvg/vm-105-disk-0.qcow2 16
cat >/etc/pve/storage.cfg <<'CFG'
dir: local
	path /var/lib/vz
	content iso,vztmpl,backup

lvm: san
	vgname svg
	content images
	shared 1

lvmthin: local-thin
	thinpool pool
	vgname tvg
	content images

lvm: chain
	vgname tvg
	content images
	snapshot-as-volume-chain 1
CFG
sync
keep_sum=$(md5 /dev/tvg/keep) held_sum=$(md5 /dev/tvg/held)
must lvchange -q -ay svg/vm-200-disk-0
shared_sum=$(md5 /dev/svg/vm-200-disk-0)
must lvchange -q -an svg/vm-200-disk-0
lvs -a -o vg_name,lv_name,lv_attr,lv_size,data_percent,pool_lv,zero
"$KEEL" snapshot -o "$O/node-guard.txtar" || fail "keel snapshot (setup)"

# --- findings: what keel check says before anything is removed --------------
"$KEEL" check -c "$CFG" >"$O/check.txt" 2>&1
sed 's/^/    /' "$O/check.txt"
for want in "lv.absent_shared" "lvchange -Z y tvg/pooln" "lv.absent_unzeroed_pool"; do
	if grep -q -- "$want" "$O/check.txt"; then
		ok "keel check names $want"
	else
		fail "keel check lacks $want"
	fi
done

# --- a shared VG: refused, the LV stays inactive and unchanged --------------
before=$(lvlist)
out=$("$KEEL" wipe -c "$CFG" svg/vm-200-disk-0 2>&1)
rc=$?
after=$(lvlist)
echo "$out" | sed 's/^/    /'
lvchange -q -ay svg/vm-200-disk-0 && sum=$(md5 /dev/svg/vm-200-disk-0) && lvchange -q -an svg/vm-200-disk-0
if [ "$rc" -ne 1 ]; then
	fail "shared vg: keel wipe rc $rc, want 1"
elif ! grep -q "shared" <<<"$out"; then
	fail "shared vg: output does not say shared"
elif [ "$before" != "$after" ]; then
	fail "shared vg: LVs changed"
	diff <(echo "$before") <(echo "$after")
elif [ "${sum:-}" != "$shared_sum" ]; then
	fail "shared vg: svg/vm-200-disk-0 content changed"
else
	ok "shared vg: svg/vm-200-disk-0 refused, still inactive and unchanged"
fi

# --- opened with plain O_RDWR right after the rename ------------------------
# A wrapper lvrename first in keel's PATH runs the real one and then starts a
# process that holds the renamed LV open without O_EXCL, as qemu opens disks.
real_lvrename=$(PATH=/usr/sbin:/sbin:/usr/bin:/bin command -v lvrename)
mkdir -p /tmp/wrap
cat >/tmp/wrap/lvrename <<WRAP
#!/bin/bash
$real_lvrename "\$@" || exit
if [ "\$2" = held ]; then
	# Open it here, before returning to keel, and leave the open file to a
	# sleeping child: one open, held after this script exits.
	exec 3<>/dev/mapper/tvg-del--held
	setsid sleep 600 >/dev/null 2>&1 </dev/null &
	echo \$! >/tmp/holder.pid
fi
WRAP
chmod +x /tmp/wrap/lvrename
out=$(PATH=/tmp/wrap:$PATH "$KEEL" wipe -c "$CFG" tvg/held 2>&1)
rc=$?
echo "$out" | sed 's/^/    /'
dmsetup info -c -o name,open | grep -- held | sed 's/^/    /'
[ -s /tmp/holder.pid ] && kill "$(cat /tmp/holder.pid)" 2>/dev/null
sleep 1
name_now=$(lvs --noheadings -o lv_name,lv_tags tvg 2>/dev/null | grep held | xargs)
if [ -e /dev/tvg/held ]; then sum=$(md5 /dev/tvg/held); elif [ -e /dev/tvg/del-held ]; then sum=$(md5 /dev/tvg/del-held); else sum=gone; fi
if [ "$rc" -ne 1 ]; then
	fail "held open: keel wipe rc $rc, want 1 (now: '$name_now')"
elif [ "$sum" != "$held_sum" ]; then
	fail "held open: tvg/held content changed"
elif [ "$name_now" != "held" ]; then
	fail "held open: LV is now '$name_now', want held without the keel_wipe tag"
else
	ok "held open: refused before the first write, named back, content unchanged"
fi
[ "$sum" != "$held_sum" ] && fail "held open: checksum $sum, was $held_sum"

# --- a thick LV on a VG stacked on a thin LV --------------------------------
g0=$(pct tvg/gpool)
out=$(timeout 300 "$KEEL" wipe -c "$CFG" gvg/old 2>&1)
rc=$?
g1=$(pct tvg/gpool)
echo "$out" | tail -n 8 | sed 's/^/    /'
echo "    tvg/gpool data: $g0% -> $g1%"
if higher "$g1" "$g0"; then
	fail "stacked on thin: tvg/gpool data went up from $g0% to $g1% (keel wipe rc $rc)"
elif [ "$rc" -ne 1 ] || ! grep -q "tvg/gpool" <<<"$out"; then
	fail "stacked on thin: rc $rc, want 1 and the pool named"
else
	ok "stacked on thin: zero-fill refused (would allocate in tvg/gpool), data stays at $g0%"
fi

# --- a thin LV of a pool that does not zero: held, then the remedy typed -----
before=$(lvlist)
out=$("$KEEL" wipe -c "$SHARE/thin.cue" --absent 2>&1)
rc=$?
echo "$out" | sed 's/^/    /'
if [ "$rc" -ne 1 ] || [ "$before" != "$(lvlist)" ]; then
	fail "unzeroed pool: keel wipe --absent rc $rc (want 1), or LVs changed"
elif ! grep -q "thin pool tvg/pooln does not zero new chunks.*lvchange -Z y tvg/pooln.*allowUnzeroedThinReuse: true" <<<"$out"; then
	fail "unzeroed pool: the refusal does not name the pool and both ways forward"
else
	ok "unzeroed pool: removal from tvg/pooln held, nothing changed"
fi
if lvchange -Z y tvg/pooln && [ "$(lvs --noheadings --binary -o zero tvg/pooln | tr -d ' ')" = "1" ]; then
	ok "remedy 'lvchange -Z y tvg/pooln' works as typed"
else
	fail "remedy 'lvchange -Z y tvg/pooln' failed: $(lvs --noheadings -o zero tvg/pooln)"
fi

# --- a thin LV larger than its pool's free space, through absent ------------
p0=$(pct tvg/pool) n0=$(pct tvg/pooln)
lvs -o lv_name,lv_size,data_percent tvg | sed 's/^/    /'
start=$(date +%s.%N)
out=$(timeout 300 "$KEEL" wipe -c "$SHARE/thin.cue" --absent 2>&1)
rc=$?
end=$(date +%s.%N)
p1=$(pct tvg/pool) n1=$(pct tvg/pooln)
echo "$out" | tail -n 20 | sed 's/^/    /'
echo "    tvg/pool data: $p0% -> $p1%; tvg/pooln data: $n0% -> $n1%; keel wipe rc $rc in $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }') s"
lvs -a -o lv_name,lv_attr,data_percent tvg | sed 's/^/    /'
if [ "$rc" -ne 0 ]; then
	fail "thin absent: keel wipe rc $rc"
fi
if higher "$p1" "$p0" || ! higher "$p0" "$p1"; then
	fail "thin absent: tvg/pool data $p0% -> $p1%, want it lower"
else
	ok "thin absent: tvg/pool data went down from $p0% to $p1%"
fi
if higher "$n1" "$n0" || ! higher "$n0" "$n1"; then
	fail "thin absent: tvg/pooln data $n0% -> $n1%, want it lower"
else
	ok "thin absent: tvg/pooln data went down from $n0% to $n1%"
fi
if lvs tvg/vm-102-disk-0 >/dev/null 2>&1 || lvs tvg/del-vm-102-disk-0 >/dev/null 2>&1; then
	fail "thin absent: vm-102-disk-0 (or del-) still exists"
else
	ok "thin absent: tvg/vm-102-disk-0 removed"
fi
if [ "$(md5 /dev/tvg/keep)" = "$keep_sum" ]; then
	ok "thin absent: tvg/keep checksum intact"
else
	fail "thin absent: tvg/keep content changed"
fi

# --- after the remedy --------------------------------------------------------
"$KEEL" check -c "$CFG" >"$O/check-after.txt" 2>&1
sed 's/^/    /' "$O/check-after.txt"
if grep -q "lv.absent_unzeroed_pool\|thin.unzeroed_reuse" "$O/check-after.txt"; then
	fail "lv.absent_unzeroed_pool or thin.unzeroed_reuse still raised after the remedy"
elif ! grep -q "lv.absent  *tvg/vm-104-disk-0" "$O/check-after.txt"; then
	fail "keel check no longer plans the absent tvg/vm-104-disk-0 in tvg/pooln"
else
	ok "lv.absent_unzeroed_pool gone after the remedy, tvg/vm-104-disk-0 planned for removal"
fi

# --- a qcow2 volume chain: whole or not at all -------------------------------
# chain ABSENT...: a desired state declaring tvg with those absent names.
chain() {
	local q=() n
	for n in "$@"; do q+=("\"$n\""); done
	cat >/tmp/chain.cue <<CUE
volumeGroups: tvg: {
	pvs: ["/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_nvme0"]
	absent: [$(IFS=,; echo "${q[*]}")]
	thinPools: {pool: chunkSize: "64K", pooln: chunkSize: "64K", gpool: chunkSize: "64K"}
}
CUE
}
head_sum=$(sum tvg/vm-105-disk-0.qcow2) link_sum=$(sum tvg/snap_vm-105-disk-0_s1.qcow2)
refused() { # refused WHAT WANT: keel check and keel wipe --absent on /tmp/chain.cue refuse
	local before out rc
	before=$(lvlist)
	"$KEEL" check -c /tmp/chain.cue >"$O/check-chain.txt" 2>&1
	out=$("$KEEL" wipe -c /tmp/chain.cue --absent 2>&1)
	rc=$?
	echo "$out" | sed 's/^/    /'
	grep "lv.absent_chain" "$O/check-chain.txt" | sed 's/^/    /'
	if [ "$rc" -ne 1 ] || [ "$before" != "$(lvlist)" ]; then
		fail "chain, $1: keel wipe --absent rc $rc (want 1), or LVs changed"
	elif ! grep -q -- "$2" <<<"$out"; then
		fail "chain, $1: the refusal lacks '$2'"
	elif ! grep -q "lv.absent_chain" "$O/check-chain.txt"; then
		fail "chain, $1: keel check does not raise lv.absent_chain"
	else
		ok "chain, $1: refused with '$2', nothing changed"
	fi
}
chain snap_vm-105-disk-0_s1.qcow2
refused "the snapshot link alone" "qm delsnapshot 105 s1"
chain vm-105-disk-0.qcow2
refused "the head alone" "snap_vm-105-disk-0_s1.qcow2"
if [ "$(sum tvg/vm-105-disk-0.qcow2)" = "$head_sum" ] && [ "$(sum tvg/snap_vm-105-disk-0_s1.qcow2)" = "$link_sum" ]; then
	ok "chain: both volumes unchanged after the refusals"
else
	fail "chain: a volume's content changed after a refusal"
fi
chain vm-105-disk-0.qcow2 snap_vm-105-disk-0_s1.qcow2
out=$(timeout 300 "$KEEL" wipe -c /tmp/chain.cue --absent 2>&1)
rc=$?
echo "$out" | tail -n 6 | sed 's/^/    /'
if [ "$rc" -ne 0 ] || exists tvg/vm-105-disk-0.qcow2 || exists tvg/snap_vm-105-disk-0_s1.qcow2 ||
	exists tvg/del-vm-105-disk-0.qcow2 || exists tvg/del-snap_vm-105-disk-0_s1.qcow2; then
	fail "chain, whole: keel wipe --absent rc $rc, or a volume of the chain is left: $(lvs --noheadings -o lv_name tvg | grep 105 | xargs)"
else
	ok "chain, whole: both volumes declared absent are removed"
fi

echo "FAILS=$FAILS"
exit "$FAILS"
