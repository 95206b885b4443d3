#!/usr/bin/env bash
# pvmove ownership and long LVM commands, in one boot of the test guest.
# kvg's fast PV is kslow, a dm-delay table 1 MiB into the NVMe (so LVM
# never finds the PV label on the NVMe itself), whose write delay is raised
# while a move copies onto it:
#
#  1. keel's own pvmove: the recovery journal and slab summary of the split
#     VDO pool kvg/vsplit are moved to the HDD by hand (as a grow onto the
#     HDD would); keel apply --timeout 10s moves them back onto kslow with a
#     100 ms write delay, a move that takes far longer than 10 s. The pvmove
#     must finish under keel, never killed, recorded in keel's state while it
#     runs and forgotten once it is done.
#  2. the admin's pvmove: `pvmove -b` of kvg/adm from the HDD onto kslow with
#     a 1 s write delay. keel check reports it in progress (the polling
#     pvmove named), keel apply runs no pvmove; then the poller is killed
#     (-9; no lvmpolld in this guest): keel check reports it interrupted,
#     keel apply still runs no pvmove and the move is left as it is.
#
# Run from the repository root with a static keel binary:
#   CGO_ENABLED=0 go build -o /tmp/keel ./cmd/keel
#   e2e/vm-run.sh --keel /tmp/keel --nvme 6G --hdd 6G e2e/ownership/pvmove.sh e2e/wipe/wipelib.sh
# Prints "ok:" / "FAIL:" lines and exits with the number of failures.
set -u
O=$OUT/pvmove
mkdir -p "$O"
versions >"$O/versions.txt" 2>&1
. "$SHARE/wipelib.sh"
nv=$(disk nvme0) || exit 2
hd=$(disk hdd1) || exit 2
CFG=/etc/keel/pvmove.cue
ST=/var/lib/keel/state.json
mkdir -p /etc/keel /var/lib/keel
chmod 755 /etc/keel
must modprobe dm-delay
sectors=$(($(blockdev --getsz "$nv") - 2048))
# slow MS: kslow delays every write by MS milliseconds (reads by none).
slow() {
	dmsetup suspend --nolockfs kslow && dmsetup load kslow --table "0 $sectors delay $nv 2048 0 $nv 2048 $1" &&
		dmsetup resume kslow && echo "kslow: $(dmsetup table kslow)"
}
must dmsetup create kslow --table "0 $sectors delay $nv 2048 0 $nv 2048 0"
fast=/dev/mapper/kslow
THREADS='threads: {logical: 1, physical: 1, hash: 1, cpu: 1, bio: 1, ack: 1}'
cat >"$CFG" <<CUE
volumeGroups: kvg: {
	pvs: ["$fast", "$hd"]
	vdoPools: vsplit: {lv: "vsplitlv", size: "4G", virtualSize: "2G", overcommit: true, slabSize: "128M", $THREADS, split: fast: ["$fast"], create: true}
}
CUE
chmod 644 "$CFG"
must pvcreate -q "$fast" "$hd"
must vgcreate -q kvg "$fast" "$hd"
"$KEEL" apply -c "$CFG" >"$O/setup.apply.txt" 2>&1 || { cat "$O/setup.apply.txt"; fail "setup: keel apply exit $?"; exit 100; }
# tail: the last segment of vsplit_vdata, as PV:FIRST-LAST.
tail_seg() { lvs -a --noheadings --segments -o seg_pe_ranges kvg/vsplit_vdata | tail -n 1 | tr -d ' '; }
TAIL=$(lvs -a --noheadings --segments -o seg_size_pe kvg/vsplit_vdata | tail -n 1 | tr -d ' ')
r=$(tail_seg)
last=${r##*-}
echo "setup: split pool tail (journal and slab summary) $TAIL extents: $r"
must pvmove -q -n kvg/vsplit_vdata "${r%%:*}:$((last - TAIL + 1))-$last" "$hd"
echo "setup: journal moved off the fast PV: $(tail_seg)"
echo "figure: setup (VDO split pool made by keel, journal moved off) ${SECONDS}s"
pvmoves() { lvs -a --noheadings -o lv_name,lv_attr kvg | awk '$1 ~ /^\[?pvmove/'; }

# --- 1. keel's own pvmove outlives keel apply --timeout -------------------
slow 100
# watch: while keel apply runs, note whether keel's state names the move.
(
	while [ ! -e "$O/apply.done" ]; do
		grep -q '"pvmoves"' "$ST" 2>/dev/null && cp "$ST" "$O/state.during.json"
		sleep 1
	done
) &
watcher=$!
t0=$(date +%s)
"$KEEL" apply -c "$CFG" --timeout 10s --command-log "$O/apply.cmds" >"$O/apply.txt" 2>&1
rc=$?
t1=$(date +%s)
touch "$O/apply.done"
wait "$watcher"
slow 0
echo "keel apply --timeout 10s: exit $rc in $((t1 - t0))s; pvmoves run: $(grep -c '"pvmove"' "$O/apply.cmds" 2>/dev/null)"
sed 's/^/    /' "$O/apply.txt" | grep -iv '^    *$' | head -40
killed=$(grep -Eci 'killed|deadline exceeded' "$O/apply.txt")
end=$(tail_seg)
if [ $rc -eq 0 ] && [ "$killed" -eq 0 ] && [ $((t1 - t0)) -gt 10 ] && [ -z "$(pvmoves)" ] &&
	[ "$(readlink -f "${end%%:*}")" = "$(readlink -f "$fast")" ]; then
	ok "keel's pvmove of the split pool's journal outlived keel apply --timeout 10s and finished, never killed"
else
	fail "keel's pvmove under --timeout 10s: exit $rc in $((t1 - t0))s, $killed kill lines, journal on ${end%%:*}, pvmove LVs: $(pvmoves | tr '\n' ' ')"
fi
if [ -e "$O/state.during.json" ] && ! grep -q '"pvmoves"' "$ST"; then
	ok "keel's state named its pvmove while it ran and forgot it once done"
else
	fail "keel's state: during the move $(cat "$O/state.during.json" 2>/dev/null | tr -d '\n\t ' | head -c 300); after: $(tr -d '\n\t ' <"$ST" | head -c 300)"
fi

echo "figure: keel's slow pvmove done at ${SECONDS}s"

# --- 2. the admin's pvmove: reported, never resumed -----------------------
must lvcreate -q -y -L 32M -n adm kvg "$hd"
fill kvg/adm 32
admsum=$(sum kvg/adm)
slow 1000
pvmove -b -n kvg/adm "$hd" "$fast" || fail "setup: the admin's pvmove -b"
for _ in $(seq 100); do [ -n "$(pvmoves)" ] && break; sleep 0.1; done
# The poller pvmove -b forks (no lvmpolld here): lvm2 overwrites its
# argv[0] with "(lvm2)", so it is found by its arguments.
poller=$(pgrep -f -- '-b -n kvg/adm' | head -n 1)
echo "admin: pvmove LV $(pvmoves | tr -s ' '), poller pid ${poller:-none}: $(tr '\0' ' ' </proc/"${poller:-0}"/cmdline 2>/dev/null)"
# judge WHEN: keel check and keel apply with the admin's move WHEN (in
# progress or interrupted); neither may run a pvmove.
judge() {
	local when=$1 slug=${1// /-} out rc
	# The host as keel sees it, for reconcile/plan's tests (KeepCaptures),
	# when the test asks for them.
	if [ -e "$SHARE/pvmove-capture" ]; then
		"$KEEL" snapshot -o "$O/node-pvmove-$slug.txtar" >/dev/null 2>&1 || echo "keel snapshot ($when): exit $?"
		cp "$CFG" "$O/pvmove.cue"
	fi
	out=$("$KEEL" check -c "$CFG" 2>&1)
	rc=$?
	echo "$out" >"$O/check.$slug.txt"
	echo "keel check ($when): exit $rc"
	grep -i pvmove <<<"$out" | sed 's/^/    /'
	if grep -q "vg.pvmove_other" <<<"$out" && grep -qi "$when" <<<"$(grep -A3 vg.pvmove_other <<<"$out")"; then
		ok "keel check reports the admin's pvmove as $when"
	else
		fail "keel check does not report the admin's pvmove as $when (vg.pvmove_other)"
	fi
	"$KEEL" apply -c "$CFG" --timeout 20s --command-log "$O/apply.$slug.cmds" >"$O/apply.$slug.txt" 2>&1
	rc=$?
	local ran
	ran=$(grep -h '"pvmove"\|"lvremove"' "$O/apply.$slug.cmds" 2>/dev/null)
	echo "keel apply ($when): exit $rc; LVM commands: $(grep -o '^\["[a-z]*"' "$O/apply.$slug.cmds" 2>/dev/null | sort | uniq -c | tr -s ' \n' ' ')"
	if [ -z "$ran" ]; then
		ok "keel apply runs no pvmove on the admin's move ($when)"
	else
		fail "keel apply acted on the admin's move ($when): $ran"
	fi
}
judge "in progress"
[ -n "$poller" ] && kill -9 "$poller"
sleep 1
echo "after kill -9 $poller: $(pgrep -fa -- 'pvmove|lvpoll|lvm2' | tr '\n' ';')"
judge interrupted
if [ -n "$(pvmoves)" ]; then
	ok "the admin's interrupted pvmove is left as it was ($(pvmoves | tr -s ' '))"
else
	fail "the admin's interrupted pvmove is gone"
fi
slow 0
pvmove -q --abort >/dev/null 2>&1
[ "$(sum kvg/adm)" = "$admsum" ] || fail "kvg/adm's data changed"
echo "figure: scenario ${SECONDS}s"
exit "$FAILS"
