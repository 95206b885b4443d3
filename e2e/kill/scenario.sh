#!/usr/bin/env bash
# Kill loop of #17 in one boot of the test guest (disks: nvme0 20G, hdd1 20G;
# 3G RAM). Every iteration first makes the host need work again, by plain
# LVM commands and file edits outside keel, then starts `keel apply` under
# killer (e2e/kill/killer) and SIGKILLs it at a point of one kind of step,
# then runs one fresh `keel apply` and `keel check`, and checks the host.
#
# Work made each iteration: scan_lvs turned to 0 in lvm.conf (keel writes 1),
# keel's udev rule deleted (it names kvg/vsplitlv, the PV of the VG kup), thin pool kvg/tchurn removed, the recovery
# journal and slab summary of the split VDO pool kvg/vsplit moved to the HDD
# (keel moves them back with pvmove), an LV kvg/gone-N created and declared
# absent (keel wipes it), the name of the previous iteration's absent LV
# reused by a new LV (keel must never touch it); for the VDO kinds also the
# VDO pool kvg/vchurn removed and declared (plain, or split for the split kinds).
#
# Kinds (rotating, so each is killed in every 9 iterations): the kill comes a
# random delay below a bound after a line containing the match appears in
# keel's command log (one JSON argv per line):
#   lvmconf       "lvmconfig","--validate"       (validate, atomic write, verify)
#   udev          "udevadm","control","--reload" (rule written, reload, verify)
#   vdo-lvcreate  "lvcreate" with "--type","vdo"
#   vdo-split     "lvextend" of vchurn           (between the pieces of a split pool)
#   vdo-lvconvert "lvconvert" with "vdo-pool"
#   vdo-partial   the same, killed with its group as soon as lvm2 has
#                 committed the VDO pool and its VDO LV and begun to activate
#                 them (kvg-vchurn_vdata exists, kvg-vchurnlv does not)
#   thin-lvcreate "lvcreate" with "thin-pool"
#   thin-partial  the same, killed with its group as soon as lvm2's first
#                 plain LV kvg-tchurn is active and kvg-tchurn_tmeta is not
#   pvmove        "pvmove"
#   wipe-rename   "--addtag","keel_wipe"         (tag, rename, clear, lvremove)
#   wipe-remove   "lvremove"
# Even iterations kill keel's process group (keel and the LVM command it
# waits for, as systemd kills a unit's cgroup), odd ones keel alone
# (KILL_GROUP=all or none: every one the same way).
#
# Environment: KILL_ITERATIONS (default 11, one per kind), KILL_SEED (default 1), KILL_KINDS,
# KILL_BUDGET (seconds; no new iteration starts once the loop has run that
# long, 0: no bound), KILL_DEADLINE (epoch seconds; no new iteration starts
# when the last one's length would pass it, 0: none). $OUT/done holds the
# number of iterations run. KILL_SNAPSHOTS=1 records the host as keel sees
# it (keel snapshot) in the states worth a fixture (the orphan, the stuck
# device, a half-done pvmove, VDO or thin pool): only KEEL_KILL_OUT keeps
# them, and under TCG each costs seconds.
# Writes $OUT/itN.* per iteration; e2e/kill/kill_test.go judges them. Prints
# "ok:" / "FAIL:" lines for what it checks on the guest itself.
set -uo pipefail
mkdir -p "$OUT"
N=${KILL_ITERATIONS:-11}
SEED=${KILL_SEED:-1}
BUDGET=${KILL_BUDGET:-0}
DEADLINE=${KILL_DEADLINE:-0}
RANDOM=$SEED
nv=$(disk nvme0) || exit 2
hd=$(disk hdd1) || exit 2
KILLER=$SHARE/killer
CFG=/etc/keel/kill.cue
FAILS=0
# snap NAME: keel snapshot into $OUT/NAME.txtar when KILL_SNAPSHOTS=1.
snap() {
	[ "${KILL_SNAPSHOTS:-0}" = 1 ] || return 0
	timeout -k 10 180 "$KEEL" snapshot -o "$OUT/$1.txtar" || echo "$1: keel snapshot exit $?"
}
ok() { echo "ok: $*"; }
fail() {
	echo "FAIL: $*" | tee -a "$OUT/fails.txt"
	FAILS=$((FAILS + 1))
}
must() { "$@" || { fail "setup: $*"; exit 100; }; }
: >"$OUT/fails.txt"

KINDS=(lvmconf udev vdo-lvcreate vdo-split vdo-lvconvert vdo-partial thin-lvcreate thin-partial pvmove wipe-rename wipe-remove)
# KILL_KINDS: a subset, in that order, instead of the whole rotation.
[ -n "${KILL_KINDS:-}" ] && read -r -a KINDS <<<"$KILL_KINDS"
kind_match() {
	case $1 in
	lvmconf) echo '"lvmconfig","--validate"' ;;
	udev) echo '"udevadm","control","--reload"' ;;
	vdo-lvcreate) echo '"lvcreate","--type","vdo"' ;;
	vdo-split) echo '"lvextend",kvg/vchurn' ;;
	vdo-lvconvert | vdo-partial) echo '"lvconvert",vdo-pool' ;;
	thin-lvcreate | thin-partial) echo '"lvcreate",thin-pool' ;;
	pvmove) echo '"pvmove"' ;;
	wipe-rename) echo '"--addtag","keel_wipe"' ;;
	wipe-remove) echo '"lvremove"' ;;
	esac
}
# kind_delay: the bound of the random delay, about the step's length under TCG.
kind_delay() {
	case $1 in
	lvmconf) echo 400ms ;;
	udev) echo 150ms ;;
	vdo-lvcreate | vdo-lvconvert | vdo-partial) echo 8s ;;
	vdo-split) echo 1500ms ;;
	thin-lvcreate | thin-partial) echo 1500ms ;;
	pvmove) echo 5s ;;
	wipe-rename) echo 2s ;;
	wipe-remove) echo 300ms ;;
	esac
}

THREADS='threads: {logical: 1, physical: 1, hash: 1, cpu: 1, bio: 1, ack: 1}'
# desired CHURN ABSENT...: the desired state; CHURN is none, plain or split.
desired() {
	local churn=$1 a list=""
	shift
	for a in "$@"; do list+="\"$a\", "; done
	{
		# scan_lvs on, so the VM disks are rejected (lvm.global_filter).
		echo 'lvm: {scanLVs: true, globalFilter: reject: ["/dev/mapper/.*-(snap_)?(vm|base)--[0-9]+--disk--[0-9]+"]}'
		echo 'removal: {mode: "zeroout", step: "1M"}'
		# keel resumes a device of LVM left suspended (its own killed
		# lvrename's) only with this opt-in, after a quiet minute.
		echo 'agent: resumeSuspendedMinutes: 1'
		echo 'volumeGroups: kvg: {'
		echo "	pvs: [\"$nv\", \"$hd\"]"
		echo "	absent: [$list]"
		echo '	vdoPools: {'
		echo "		vsplit: {lv: \"vsplitlv\", size: \"4G\", virtualSize: \"2G\", overcommit: true, slabSize: \"128M\", $THREADS, split: fast: [\"$nv\"], create: true}"
		case $churn in
		plain) echo "		vchurn: {lv: \"vchurnlv\", size: \"4G\", virtualSize: \"2G\", overcommit: true, slabSize: \"128M\", $THREADS, create: true}" ;;
		split) echo "		vchurn: {lv: \"vchurnlv\", size: \"4G\", virtualSize: \"2G\", overcommit: true, slabSize: \"128M\", $THREADS, split: fast: [\"$nv\"], create: true}" ;;
		esac
		echo '	}'
		echo '	thinPools: {'
		echo '		tkeep: {size: "256M", chunkSize: "64K", create: true}'
		echo '		tchurn: {size: "128M", chunkSize: "64K", create: true}'
		echo '	}'
		echo '}'
		# A VG on the VDO LV: keel's udev rule then names kvg/vsplitlv (a
		# rule file with no rule line is not written at all).
		echo 'volumeGroups: kup: pvs: ["/dev/kvg/vsplitlv"]'
	} >"$CFG"
}

# sums: sha256 of every LV whose data must survive, one "name sum" line each.
sums() {
	local lv
	for lv in "$@"; do
		printf '%s %s\n' "$lv" "$(head -c 8M "/dev/$lv" | sha256sum | cut -c1-16)"
	done
}

lvexists() { lvs "$1" >/dev/null 2>&1; }

# journal_off: move the last $TAIL extents of vsplit_vdata (recovery journal
# and slab summary) from the NVMe to the HDD, as a grow onto the HDD would.
journal_off() {
	local r pv last first
	r=$(lvs -a --noheadings --segments -o seg_pe_ranges kvg/vsplit_vdata | tail -n 1 | tr -d ' ')
	pv=${r%%:*}
	last=${r##*-}
	first=$((last - TAIL + 1))
	[ "$(readlink -f "$pv")" = "$(readlink -f "$nv")" ] || {
		echo "journal_off: the last segment $r is not on the NVMe"
		return 1
	}
	pvmove -q -n kvg/vsplit_vdata "$pv:$first-$last" "$hd" >/dev/null
}

# --- setup: the stack keel keeps, and the data that must survive ----------
mkdir -p /etc/keel /var/lib/keel
must pvcreate -q "$nv" "$hd"
must vgcreate -q kvg "$nv" "$hd"
desired none
t0=$(date +%s)
"$KEEL" apply -c "$CFG" --command-log "$OUT/it0.apply.cmds" >"$OUT/it0.apply.txt" 2>&1
rc=$?
echo "setup: keel apply exit $rc in $(($(date +%s) - t0))s"
# 1: kup, declared on the VDO LV, is made by hand below.
[ $rc -le 1 ] || { cat "$OUT/it0.apply.txt"; fail "setup: keel apply exit $rc"; exit 100; }
TAIL=$(lvs -a --noheadings --segments -o seg_size_pe kvg/vsplit_vdata | tail -n 1 | tr -d ' ')
echo "setup: split pool tail (journal and slab summary) $TAIL extents"
lvs -a --segments -o lv_name,seg_start_pe,seg_size_pe,devices kvg
# The VG on the VDO LV, as on a Proxmox host (VM disks in a VG on VDO).
must pvcreate -q /dev/kvg/vsplitlv
must vgcreate -q kup /dev/kvg/vsplitlv
must lvcreate -q -y -L 8M -n kdata kup
must lvcreate -q -y -V 64M -T kvg/tkeep -n tdata
must lvcreate -q -y -L 8M -n other kvg "$hd"
for lv in kup/kdata kvg/tdata kvg/other; do
	must dd if=/dev/urandom of=/dev/$lv bs=1M count=8 oflag=direct status=none
done
KEEP="kup/kdata kvg/tdata kvg/other"
# keel's udev rule for kup's PV is written once the VG exists.
"$KEEL" apply -c "$CFG" --command-log "$OUT/it0.apply.cmds" >>"$OUT/it0.apply.txt" 2>&1 || { cat "$OUT/it0.apply.txt"; fail "setup: second keel apply exit $?"; }
sums $KEEP >"$OUT/sums.0"
cat "$OUT/sums.0"
"$KEEL" check -c "$CFG" --format json >"$OUT/it0.check.json" 2>&1
echo $? >"$OUT/it0.check.rc"
CONF_SUM=$(sha256sum /etc/lvm/lvm.conf | cut -d' ' -f1)
cp /etc/lvm/lvm.conf "$OUT/lvm.conf.converged"
RULES=$(ls /etc/udev/rules.d/*keel* 2>/dev/null)
echo "setup: keel's udev rules: $RULES"
[ -n "$RULES" ] || fail "setup: keel wrote no udev rule"
grep -q '^[[:space:]]*scan_lvs[[:space:]]*=[[:space:]]*1' /etc/lvm/lvm.conf || fail "setup: no scan_lvs = 1 in lvm.conf"

# --- an orphan pvmove LV, before the loop ----------------------------------
# lvm2's pvmove_finish (tools/pvmove_poll.c) commits the moved LVs on their
# new PV and the mirror pvmove0 as a visible error-segment LV (PVMOVE and
# LOCKED cleared) first, then deactivates pvmove0 and removes it in a second
# commit. When pvmove0 cannot be deactivated (something holds it open), or
# the command is killed between the two commits (as the kill loop has done:
# docs/reliability.md), pvmove0 stays: "vwc-a-v---", no 'p', and `pvmove`
# with no argument no longer sees it. Made here deterministically: a
# hand-run pvmove of the journal back to the NVMe while a shell holds
# /dev/mapper/kvg-pvmove0 open.
# Then one LV's table is pointed at pvmove0's device, the state a kill
# between a commit and the resume of the moved LVs leaves (their live table
# still maps the mirror, now an error target), and keel must refresh it
# before it can remove pvmove0.
orphan() {
	local r pv first last rc maj
	journal_off || { fail "orphan: could not move the journal off the NVMe"; return; }
	r=$(lvs -a --noheadings --segments -o seg_pe_ranges kvg/vsplit_vdata | tail -n 1 | tr -d ' ')
	pv=${r%%:*}
	first=${r#*:}
	first=${first%-*}
	last=${r##*-}
	rm -f "$OUT/orphan.moved"
	(
		while [ ! -e /dev/mapper/kvg-pvmove0 ]; do sleep 0.05; done
		exec 3</dev/mapper/kvg-pvmove0
		while [ ! -e "$OUT/orphan.moved" ]; do sleep 0.1; done
	) &
	local holder=$!
	pvmove -n kvg/vsplit_vdata "$pv:$first-$last" "$nv" >"$OUT/orphan.pvmove.txt" 2>&1
	rc=$?
	touch "$OUT/orphan.moved"
	wait "$holder"
	echo "orphan: pvmove with pvmove0 held open: exit $rc, $(grep -c . "$OUT/orphan.pvmove.txt") lines: $(grep -i -m1 'abort\|orphan' "$OUT/orphan.pvmove.txt")"
	lvs -a -o lv_name,lv_attr,segtype,devices kvg | tee "$OUT/orphan.lvs"
	if [ "$(lvs --noheadings -o segtype kvg/pvmove0 2>/dev/null | tr -d ' ')" != error ]; then
		fail "orphan: no error-segment pvmove0 left to test with"
		return
	fi
	maj=$(dmsetup info -c --noheadings -o major,minor kvg-pvmove0 | tr -d ' ')
	dmsetup table kvg-other >"$OUT/orphan.other.table"
	# kvg-other's first sectors now map pvmove0's (an error target, as
	# small as one extent), the rest its own extents as before.
	local len dev off mv table
	read -r _ len _ dev off <"$OUT/orphan.other.table"
	mv=$(blockdev --getsz /dev/mapper/kvg-pvmove0)
	if [ "$mv" -ge "$len" ]; then
		table="0 $len linear $maj 0"
	else
		table="0 $mv linear $maj 0"$'\n'"$mv $((len - mv)) linear $dev $((off + mv))"
	fi
	if ! { dmsetup reload kvg-other --table "$table" && dmsetup resume kvg-other; }; then
		fail "orphan: could not point kvg-other at pvmove0 with: $table"
		# a failed resume leaves the device suspended: put it back
		dmsetup clear kvg-other
		dmsetup resume kvg-other
		return
	fi
	echo "orphan: kvg-other now maps $(dmsetup table kvg-other)"
	cp "$CFG" "$OUT/orphan.cue"
	snap orphan
	"$KEEL" check -c "$CFG" --format json >"$OUT/orphan.check.json" 2>&1
	echo "orphan: keel check exit $?: $(grep -o '"id": "[a-z._]*"' "$OUT/orphan.check.json" | tr '\n' ' ')"
	if grep -q '"vg.pvmove_orphan"' "$OUT/orphan.check.json"; then ok "orphan: keel check raises vg.pvmove_orphan"; else fail "orphan: keel check does not raise vg.pvmove_orphan"; fi
	"$KEEL" apply -c "$CFG" --command-log "$OUT/orphan.apply.cmds" >"$OUT/orphan.apply.txt" 2>&1
	echo "orphan: keel apply exit $?"
	sed 's/^/    /' "$OUT/orphan.apply.txt"
	if lvs -a --noheadings -o lv_name kvg | grep -q pvmove; then fail "orphan: pvmove0 is still there: $(lvs -a --noheadings -o lv_name,lv_attr,segtype kvg | grep pvmove | tr -s ' ')"; else ok "orphan: pvmove0 removed"; fi
	if dmsetup table kvg-other | grep -q " $maj "; then fail "orphan: kvg-other still maps pvmove0's device $maj"; else ok "orphan: kvg-other maps its PV again: $(dmsetup table kvg-other)"; fi
	sums $KEEP >"$OUT/orphan.sums"
	if cmp -s "$OUT/sums.0" "$OUT/orphan.sums"; then ok "orphan: checksums intact"; else fail "orphan: checksums changed"; fi
	r=$(lvs -a --noheadings --segments -o seg_pe_ranges kvg/vsplit_vdata | tail -n 1 | tr -d ' ')
	if [ "$(readlink -f "${r%%:*}")" = "$(readlink -f "$nv")" ]; then ok "orphan: the journal is on the NVMe"; else fail "orphan: the journal is not on the NVMe: $(lvs -a --noheadings --segments -o seg_pe_ranges kvg/vsplit_vdata | tr -s ' ')"; fi
}
orphan

# suspended_now: the device-mapper devices suspended now, "name attr" each
# (dmsetup reads the kernel, it scans no device).
suspended_now() { dmsetup info -c --noheadings -o name,attr 2>/dev/null | awk -F: '$2 ~ /s/ { print $1 ":" $2 }'; }

# --- an LV left suspended, before the loop --------------------------------
# An LVM command killed between its suspend and its resume leaves the LV's
# device suspended (the kill loop has killed keel's group during its
# lvrename of an LV it removes: docs/reliability.md): every I/O to it waits,
# and with scan_lvs = 1 every LVM command waits on it. Made here by hand the
# way lvm2 leaves it, with a preloaded table that maps something else (a
# zero target), which keel must drop, not swap in.
suspended() {
	local len rc
	dmsetup table kvg-other >"$OUT/suspended.table.before"
	read -r _ len _ <"$OUT/suspended.table.before"
	dmsetup suspend kvg-other && dmsetup load kvg-other --table "0 $len zero" ||
		{ fail "suspended: could not suspend kvg-other with a preloaded table"; dmsetup clear kvg-other; dmsetup resume kvg-other; return; }
	# lvm2 scans only the PVs its hints list (/run/lvm/hints) until the
	# list of devices changes, as an lvrename's does, or hints are gone
	# (lib/label/hints.c): then every device, LVs too with scan_lvs = 1.
	rm -f /run/lvm/hints
	echo "suspended: $(suspended_now | tr '\n' ' ')"
	cp "$CFG" "$OUT/suspended.cue"
	snap suspended
	timeout -k 10 180 "$KEEL" check -c "$CFG" --format json >"$OUT/suspended.check.json" 2>"$OUT/suspended.check.err"
	rc=$?
	echo "suspended: keel check exit $rc: $(grep -o '"id": "[a-z._]*"' "$OUT/suspended.check.json" | tr '\n' ' ')"
	if grep -q '"dm.suspended"' "$OUT/suspended.check.json"; then ok "suspended: keel check raises dm.suspended"; else fail "suspended: keel check does not raise dm.suspended (exit $rc)"; fi
	# The first pass records since when no LVM command was on kvg and
	# leaves the device suspended; one a minute later resumes it
	# (agent.resumeSuspendedMinutes: 1).
	timeout -k 10 300 "$KEEL" apply -c "$CFG" >"$OUT/suspended.apply0.txt" 2>&1
	if [ -n "$(suspended_now)" ] && grep -q "keel resumes it at" "$OUT/suspended.apply0.txt"; then
		ok "suspended: the first keel apply leaves it suspended and says when it resumes it"
	else
		fail "suspended: the first keel apply: $(suspended_now | tr '\n' ' ') $(grep -m1 'dm.suspended' "$OUT/suspended.apply0.txt")"
	fi
	sleep 61
	timeout -k 10 300 "$KEEL" apply -c "$CFG" --command-log "$OUT/suspended.apply.cmds" >"$OUT/suspended.apply.txt" 2>&1
	echo "suspended: keel apply exit $?"
	sed 's/^/    /' "$OUT/suspended.apply.txt"
	if [ -n "$(suspended_now)" ]; then
		fail "suspended: still suspended after keel apply: $(suspended_now | tr '\n' ' ')"
		dmsetup clear kvg-other
		dmsetup resume kvg-other
	else
		ok "suspended: nothing suspended"
	fi
	if dmsetup table kvg-other | cmp -s - "$OUT/suspended.table.before"; then ok "suspended: kvg-other runs its own table"; else fail "suspended: kvg-other's table changed: $(dmsetup table kvg-other)"; fi
	if dmsetup info -c --noheadings -o attr kvg-other | grep -q I; then fail "suspended: kvg-other still has a preloaded table"; else ok "suspended: no preloaded table"; fi
	if timeout -k 10 60 lvs kvg >/dev/null 2>&1; then ok "suspended: lvs answers"; else fail "suspended: lvs exit $?"; fi
	sums $KEEP >"$OUT/suspended.sums"
	if cmp -s "$OUT/sums.0" "$OUT/suspended.sums"; then ok "suspended: checksums intact"; else fail "suspended: checksums changed"; fi
}
suspended

prev=""
off=$((SEED % ${#KINDS[@]}))
loop0=$(date +%s)
echo 0 >"$OUT/done"
for i in $(seq 1 "$N"); do
	if [ "$BUDGET" -gt 0 ] && [ $(($(date +%s) - loop0)) -ge "$BUDGET" ]; then
		echo "time budget of ${BUDGET}s spent: stopping after $((i - 1)) iterations"
		break
	fi
	if [ "$DEADLINE" -gt 0 ] && [ $(($(date +%s) + ${last:-60})) -ge "$DEADLINE" ]; then
		echo "deadline $(date -u -d @"$DEADLINE" +%H:%M:%S) UTC: stopping after $((i - 1)) iterations"
		break
	fi
	kind=${KINDS[$(((i - 1 + off) % ${#KINDS[@]}))]}
	it0=$(date +%s)
	echo "=== iteration $i: $kind"
	echo "$kind" >"$OUT/it$i.kind"
	# --- make work -------------------------------------------------------
	sed -i 's/^\([[:space:]]*scan_lvs[[:space:]]*=[[:space:]]*\)1/\10/' /etc/lvm/lvm.conf
	grep -q '^[[:space:]]*scan_lvs[[:space:]]*=[[:space:]]*0' /etc/lvm/lvm.conf || fail "it$i: could not turn scan_lvs to 0"
	rm -f $RULES
	lvexists kvg/tchurn && { lvremove -q -y kvg/tchurn >/dev/null || fail "it$i: lvremove kvg/tchurn"; }
	lvexists kvg/vchurn && { lvremove -q -y kvg/vchurn >/dev/null || fail "it$i: lvremove kvg/vchurn"; }
	journal_off || fail "it$i: could not move the journal off the NVMe"
	cur=gone-$i
	must lvcreate -q -y -L 4M -n "$cur" kvg "$hd"
	must dd if=/dev/urandom of=/dev/kvg/$cur bs=1M count=4 oflag=direct status=none
	reused=""
	if [ -n "$prev" ]; then
		# The name keel removed last iteration, given to a new LV: a reused name.
		must lvcreate -q -y -L 4M -n "$prev" kvg "$hd"
		must dd if=/dev/urandom of=/dev/kvg/$prev bs=1M count=4 oflag=direct status=none
		reused=kvg/$prev
	fi
	lvs --noheadings -o lv_name,lv_uuid kvg/$cur $reused >"$OUT/it$i.uuids"
	sums $KEEP $reused >"$OUT/it$i.sums.before"
	churn=none
	case $kind in
	vdo-lvcreate) churn=plain ;;
	vdo-split | vdo-lvconvert | vdo-partial) churn=split ;;
	esac
	sleep 1 # lv_time has whole seconds: the LVs predate keel's first sight of the names
	desired "$churn" $prev "$cur"
	cp "$CFG" "$OUT/it$i.cue"
	# --- kill ------------------------------------------------------------
	group=""
	case ${KILL_GROUP:-alternate} in
	all) group=-group ;;
	alternate) [ $((i % 2)) -eq 0 ] && group=-group ;;
	esac
	when=()
	case $kind in thin-partial | vdo-partial) group=-group ;; esac # keel alone: lvm2 would go on and finish
	# thin-partial: killed while lvm2 wipes the pool's metadata area, the
	# plain LV tchurn it committed first (active as kvg-tchurn, before the
	# _tmeta and _tdata sub-LVs exist): too brief for a random delay.
	[ "$kind" = thin-partial ] && when=(-when-exists /dev/mapper/kvg-tchurn -unless-exists /dev/mapper/kvg-tchurn_tmeta)
	# vdo-partial: lvconvert --type vdo-pool commits the pool (renamed
	# vchurn_vdata) and its VDO LV in one lv_create_single, then activates
	# them (convert_vdo_lv, lib/metadata/vdo_manip.c): killed once the
	# _vdata sub-LV is active and before the VDO LV is, it leaves a whole
	# pool that nothing activated.
	[ "$kind" = vdo-partial ] && when=(-when-exists /dev/mapper/kvg-vchurn_vdata -unless-exists /dev/mapper/kvg-vchurnlv)
	"$KILLER" -log "$OUT/it$i.kill.cmds" -match "$(kind_match "$kind")" -delay-max "$(kind_delay "$kind")" "${when[@]}" \
		-seed "$((SEED * 1000 + i))" -out "$OUT/it$i.kill.json" $group -- \
		"$KEEL" apply -v -c "$CFG" --command-log "$OUT/it$i.kill.cmds" >"$OUT/it$i.kill.txt" 2>&1
	grep '^killer:' "$OUT/it$i.kill.txt"
	cp /var/lib/keel/state.json "$OUT/it$i.state.killed" 2>/dev/null
	left=$(suspended_now)
	if [ -n "$left" ]; then
		# Every LVM command would wait on it (scan_lvs = 1): only keel's
		# next apply may look at the host.
		echo "it$i: the kill left devices suspended: $(echo $left)"
		snap "it$i.suspended"
	elif lvs -a --noheadings -o lv_name kvg 2>/dev/null | grep -q pvmove; then
		# The kill left a pvmove half-done: record the host as keel sees it
		# (the capture reconcile's planner tests replay).
		echo "it$i: the kill left a pvmove in progress:"
		lvs -a -o lv_name,lv_attr,copy_percent,devices kvg | tee "$OUT/it$i.pvmove.lvs"
		snap "it$i.pvmove"
	fi
	seg=$([ -z "$left" ] && lvs --noheadings -o segtype kvg/vchurn 2>/dev/null | tr -d ' ')
	if [ -n "$seg" ] && [ "$seg" != vdo-pool ]; then
		# The kill stopped a VDO pool's creation half-way: record it too.
		echo "it$i: the kill left kvg/vchurn a $seg LV:"
		lvs -a -o lv_name,segtype,lv_size,lv_tags,devices kvg/vchurn | tee "$OUT/it$i.vdopartial.lvs"
		snap "it$i.vdopartial"
	elif [ "$seg" = vdo-pool ] && { lvs --noheadings -o lv_tags kvg/vchurn | grep -q keel_create || ! lvs --noheadings -o lv_active kvg/vchurnlv | grep -q active; }; then
		# lvm2 made the pool whole but the kill came before it was active,
		# or before keel took its creation tag off: record it.
		echo "it$i: the kill left the VDO pool kvg/vchurn whole but unfinished:"
		lvs -a -o lv_name,segtype,lv_active,lv_tags kvg | grep -E 'vchurn|LV' | tee "$OUT/it$i.vdounfinished.lvs"
		dmsetup info -c -o name,attr | grep -E 'vchurn|Name' | tee -a "$OUT/it$i.vdounfinished.lvs"
		snap "it$i.vdounfinished"
	fi
	seg=$([ -z "$left" ] && lvs --noheadings -o segtype,lv_tags kvg/tchurn 2>/dev/null | tr -s ' ' | sed 's/^ //')
	if [ -n "$seg" ] && { [ "${seg%% *}" != thin-pool ] || [[ "$seg" == *keel_create* ]]; }; then
		# The kill stopped a thin pool's creation half-way (lvm2 commits
		# the pool's metadata area as a plain LV first, and activates the
		# pool after its last commit): record it.
		echo "it$i: the kill left kvg/tchurn a $seg LV:"
		lvs -a -o lv_name,segtype,lv_size,lv_tags,devices kvg/tchurn | tee "$OUT/it$i.thinpartial.lvs"
		snap "it$i.thinpartial"
	fi
	# --- recover ----------------------------------------------------------
	if [ -n "$left" ]; then
		# keel resumes what the kill left suspended after a quiet minute
		# (agent.resumeSuspendedMinutes): the first pass records it.
		timeout -k 10 600 "$KEEL" apply -c "$CFG" >"$OUT/it$i.apply0.txt" 2>&1
		sleep 61
	fi
	t0=$(date +%s)
	timeout -k 10 600 "$KEEL" apply -c "$CFG" --command-log "$OUT/it$i.apply.cmds" >"$OUT/it$i.apply.txt" 2>&1
	rc=$?
	left=$(suspended_now)
	if [ -n "$left" ]; then
		fail "it$i: devices still suspended after keel apply: $(echo $left)"
		for d in $left; do dmsetup clear "${d%%:*}"; dmsetup resume "${d%%:*}"; done
	fi
	echo $rc >"$OUT/it$i.apply.rc"
	echo "it$i: keel apply after the kill: exit $rc in $(($(date +%s) - t0))s"
	[ $rc -eq 0 ] || sed 's/^/    /' "$OUT/it$i.apply.txt"
	timeout 300 "$KEEL" check -c "$CFG" --format json >"$OUT/it$i.check.json" 2>"$OUT/it$i.check.err"
	echo $? >"$OUT/it$i.check.rc"
	echo "it$i: keel check exit $(cat "$OUT/it$i.check.rc"): $(grep -o '"id": "[a-z._]*"' "$OUT/it$i.check.json" | tr '\n' ' ')"
	cp /var/lib/keel/state.json "$OUT/it$i.state.json" 2>/dev/null
	# --- invariants on the guest -----------------------------------------
	if out=$(lvmconfig --validate 2>&1); then ok "it$i: lvmconfig --validate"; else fail "it$i: lvmconfig --validate: $out"; fi
	sum=$(sha256sum /etc/lvm/lvm.conf | cut -d' ' -f1)
	if [ "$sum" = "$CONF_SUM" ]; then ok "it$i: lvm.conf whole, byte for byte keel's converged file"; else
		fail "it$i: lvm.conf differs from keel's converged file"
		diff "$OUT/lvm.conf.converged" /etc/lvm/lvm.conf | head -20
	fi
	sums $KEEP $reused >"$OUT/it$i.sums.after"
	if cmp -s "$OUT/it$i.sums.before" "$OUT/it$i.sums.after" && [ -s "$OUT/it$i.sums.after" ]; then
		ok "it$i: checksums intact ($(echo $KEEP $reused))"
	else
		fail "it$i: checksums changed"
		diff "$OUT/it$i.sums.before" "$OUT/it$i.sums.after"
	fi
	if lvs --noheadings -o lv_name kvg >"$OUT/it$i.lvnames" 2>&1; then
		if grep -q 'del-' "$OUT/it$i.lvnames"; then fail "it$i: del-* LV left: $(grep del- "$OUT/it$i.lvnames" | tr -d ' ')"; else ok "it$i: no del-* LV"; fi
		if lvexists "kvg/$cur"; then fail "it$i: kvg/$cur (absent) still exists"; else ok "it$i: kvg/$cur removed"; fi
	else
		fail "it$i: lvs failed: $(cat "$OUT/it$i.lvnames")"
	fi
	lvs -a --noheadings -o lv_name,lv_attr,copy_percent kvg >"$OUT/it$i.lvs-a" 2>&1
	if grep -q -i pvmove "$OUT/it$i.lvs-a"; then
		fail "it$i: a pvmove is still in progress: $(grep -i pvmove "$OUT/it$i.lvs-a" | tr -s ' ')"
		# repair so the loop goes on: finish it the way LVM documents
		pvmove || fail "it$i: pvmove (resume) by the test failed"
	else
		ok "it$i: no pvmove in progress"
	fi
	# keel's atomic writes (reconcile/atomicfile) go through a temporary
	# .NAME.keel-* beside the file: one left after the recovery is litter
	# the kill made and keel did not clear.
	litter=$(ls -d /etc/lvm/.lvm.conf.keel-* /etc/udev/rules.d/.*.keel-* 2>/dev/null)
	if [ -n "$litter" ]; then fail "it$i: leftover temporary files: $(echo $litter)"; else ok "it$i: no leftover temporary file"; fi
	lvs -a --segments -o lv_name,seg_size_pe,devices kvg/vsplit_vdata >"$OUT/it$i.segments" 2>&1
	echo $(($(date +%s) - it0)) >"$OUT/it$i.secs"
	last=$(cat "$OUT/it$i.secs")
	echo "it$i: $kind done in $(cat "$OUT/it$i.secs")s"
	prev=$cur
	echo "$i" >"$OUT/done"
done
lvs -a -o lv_name,lv_attr,lv_size,devices kvg
echo "FAILS=$FAILS"
exit "$FAILS"
