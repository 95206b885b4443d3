#!/usr/bin/env bash
# keel run's change signal on a real kernel, in one boot of the test guest
# (disks: nvme0 8G, hdd1 8G, ssd2 2G, hdd3 4G). The daemon runs with
# --resync 1h, so only its change signals can start a pass; behind its back
# this script changes LVM and device-mapper state in every way the daemon
# must notice, and requires after each a pass (why: not start, not resync)
# within the limit whose view of LVM differs from the pass before the change
# (lvm_digest of its `pass done` line). Then, with --no-uevents, the
# metadata poll alone must see metadata-only changes. Needs, in the share: stacks.sh
# (e2e/scenarios), desired/bcache.cue (e2e/apply/desired) and $KEEL. Every
# check prints PASS: or FAIL: and writes its evidence to $OUT.
set -uo pipefail
. "$SHARE/stacks.sh"
nv=$(disk nvme0) || exit 2
hd=$(disk hdd1) || exit 2
ssd=$(disk ssd2) || exit 2
bk=$(disk hdd3) || exit 2
fail=0
pass() { echo "PASS: $*"; }
flunk() {
	echo "FAIL: $*"
	fail=1
}
# LIMIT: the metadata poll (--poll 10s where only it can see a change) plus
# a full pass under TCG
# (fullreport takes 2-5 s there) plus a margin.
LIMIT=${LIMIT:-25}
LOG=$OUT/daemon.log
now_ms() { echo $(($(date +%s%N) / 1000000)); }
passes() { grep -c 'pass done' "$LOG"; }
# digest_of LINE: the lvm_digest field of a `pass done` line ("" when none).
digest_of() { sed -n 's/.*lvm_digest=\([0-9a-f]*\).*/\1/p' <<<"$1"; }
last_digest() { digest_of "$(grep 'pass done' "$LOG" | tail -1)"; }
# quiet SECONDS: wait until no pass has started or ended for SECONDS.
quiet() {
	local n i
	for i in $(seq 60); do
		n=$(wc -l <"$LOG")
		sleep "$1"
		[ "$(wc -l <"$LOG")" = "$n" ] && return 0
	done
	return 1
}
# change NAME CMD...: run CMD behind keel's back, then require a pass done
# after it, not from the start or a resync, whose lvm_digest differs from
# the last one before the change. Prints the reaction time from the end of
# CMD to the end of that pass.
change() {
	local name=$1 before digest0 t0 line why d ms
	shift
	quiet 3 || flunk "$name: the daemon never went quiet before the change"
	before=$(wc -l <"$LOG")
	digest0=$(last_digest)
	step "$@" >>"$OUT/changes.txt" 2>&1 || flunk "$name: $* failed"
	t0=$(now_ms)
	while :; do
		line=$(tail -n +"$((before + 1))" "$LOG" | grep 'pass done' | grep -v -e 'why=start' -e 'why=resync' |
			while IFS= read -r l; do
				d=$(digest_of "$l")
				if [ -n "$d" ] && [ "$d" != "$digest0" ]; then
					echo "$l"
					break
				fi
			done)
		[ -n "$line" ] && break
		[ $(($(now_ms) - t0)) -ge $((LIMIT * 1000)) ] && break
		sleep 0.1
	done
	ms=$(($(now_ms) - t0))
	if [ -n "$line" ]; then
		why=$(sed -n 's/.*why="\{0,1\}\([^"]*\)"\{0,1\} took.*/\1/p' <<<"$line")
		echo "$name $ms" >>"$OUT/reaction-ms.txt"
		if [ -n "${WANT_WHY:-}" ] && [ "$why" != "$WANT_WHY" ]; then
			flunk "$name: a pass saw it ${ms} ms after, but why: $why, want $WANT_WHY"
		else
			pass "$name: a pass saw it ${ms} ms after (why: $why)"
		fi
	else
		flunk "$name: no pass saw it within ${LIMIT} s; pass lines since: $(tail -n +"$((before + 1))" "$LOG" | grep -c 'pass done'), digest before ${digest0:-none}"
		tail -n +"$((before + 1))" "$LOG" | grep 'pass done' | sed 's/^/  /'
	fi
}
# cutoff_back: wait up to LIMIT s for sequential_cutoff 0.0k; prints the ms.
cutoff_back() {
	local t0 i
	t0=$(now_ms)
	for i in $(seq $((LIMIT * 10))); do
		if [ "$(cat /sys/block/bcache0/bcache/sequential_cutoff 2>/dev/null)" = 0.0k ]; then
			echo $(($(now_ms) - t0))
			return 0
		fi
		sleep 0.1
	done
	return 1
}
# cpu_ticks PID: utime+stime+cutime+cstime of PID (clock ticks).
cpu_ticks() { awk '{print $14+$15+$16+$17}' "/proc/$1/stat"; }

# Every kernel block uevent of the run, for the report (which change made
# which event).
udevadm monitor --kernel --subsystem-match=block >"$OUT/uevents.txt" 2>&1 &
mon=$!
echo "== the stack: VG sigvg on nvme0 with an active LV; bcache on ssd2 + hdd3"
stack_bcache "$ssd" "$bk" || flunk "make-bcache"
step pvcreate -q "$nv" && step vgcreate -q sigvg "$nv" &&
	step lvcreate -q -y -L 64M -n act sigvg || flunk "stack"
# The label and metadata area header of a PV before and after one commit:
# fixtures of probes' header parser (probes/testdata/pvheader).
dd if="$nv" of="$OUT/pv-nvme0-a.bin" bs=4096 count=2 iflag=direct status=none
lvchange -q --addtag captured sigvg/act
dd if="$nv" of="$OUT/pv-nvme0-b.bin" bs=4096 count=2 iflag=direct status=none
mkdir -p /etc/keel && chmod 755 /etc/keel
uuid=$(cat /sys/block/bcache0/bcache/backing_dev_uuid)
sed "s|\"/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_hdd1\"|\"$uuid\"|" "$SHARE/desired/bcache.cue" >/etc/keel/bcache.cue

"$KEEL" run -c /etc/keel --textfile "$OUT/keel.prom" --resync 1h >"$LOG" 2>&1 &
dpid=$!
for i in $(seq 300); do [ "$(passes)" -ge 1 ] && break; sleep 0.1; done
[ "$(passes)" -ge 1 ] || flunk "no first pass in 30 s"
quiet 5 || flunk "the daemon did not go quiet after its start"
grep 'pass done' "$LOG" | sed 's/^/  /'

change "lvcreate (active)" lvcreate -q -y -L 32M -n new1 sigvg
change "lvcreate -an" lvcreate -q -y -an -Zn -L 32M -n new2 sigvg
change "lvextend (inactive LV)" lvextend -q -y -L +32M sigvg/new2
change "lvchange --addtag (inactive LV)" lvchange -q --addtag keel-e2e sigvg/new2
change "lvremove (inactive LV)" lvremove -q -y sigvg/new2
change "lvchange -an" lvchange -q -an sigvg/new1
change "lvremove (after lvchange -ay)" sh -c 'lvchange -q -ay sigvg/new1 && sleep 0.5 && lvremove -q -y sigvg/new1'
change "pvcreate (fresh disk)" pvcreate -q "$hd"
change "vgextend" vgextend -q sigvg "$hd"
change "pvmove" pvmove -q -n act "$nv" "$hd"

echo "== bcache re-registration (the kernel forgets the tunables)"
quiet 3
before=$(wc -l <"$LOG")
echo 8388608 >/sys/block/bcache0/bcache/sequential_cutoff
bcache_reregister "$ssd" "$bk" || flunk "re-register"
if ms=$(cutoff_back); then
	echo "bcache-reregistration $ms" >>"$OUT/reaction-ms.txt"
	pass "bcache re-registration: tunables back ${ms} ms after"
else
	flunk "bcache re-registration: sequential_cutoff $(cat /sys/block/bcache0/bcache/sequential_cutoff 2>/dev/null)"
fi
for i in $(seq $((LIMIT * 10))); do
	tail -n +"$((before + 1))" "$LOG" | grep 'pass done' | grep -q 'why="bcache device' && break
	sleep 0.1
done
tail -n +"$((before + 1))" "$LOG" | grep 'pass done' | grep -q 'why="bcache device' &&
	pass "bcache re-registration: a full pass followed" ||
	flunk "bcache re-registration: no full pass: $(tail -n +"$((before + 1))" "$LOG" | grep -e 'pass done' -e bcache | tr '\n' ' ')"

echo "== idle: no pass without a change, and its CPU (own + children)"
# 12 s of a quiet log: the pass a bcache device's removal starts comes 10 s
# after it (bcacheRemoveDelay), and the re-registration above removed one.
quiet 12
before=$(passes)
t0=$(cpu_ticks $dpid)
up0=$(cut -d' ' -f1 /proc/uptime)
sleep "${IDLE:-60}"
t1=$(cpu_ticks $dpid)
up1=$(cut -d' ' -f1 /proc/uptime)
idle_passes=$(($(passes) - before))
hz=$(getconf CLK_TCK)
awk -v a="$t0" -v b="$t1" -v u0="$up0" -v u1="$up1" -v hz="$hz" \
	'BEGIN{printf "idle %.0f s: %d ticks = %.3f%% of a core (own + children)\n", u1-u0, b-a, 100*(b-a)/hz/(u1-u0)}' |
	tee "$OUT/idle-cpu.txt"
# No pass counts only from a daemon that ran the whole minute: a dead one
# runs none either.
if ! alive $dpid; then
	flunk "idle: the daemon (pid $dpid) is not running: $(tail -n 3 "$LOG" | tr '\n' ' ')"
elif [ "$idle_passes" = 0 ]; then
	pass "idle: no pass in ${IDLE:-60} s, the daemon still running"
else
	flunk "idle: $idle_passes passes in ${IDLE:-60} s without a change"
fi
stop_daemon $dpid && pass "daemon: $STOP_STATUS" || flunk "daemon: $STOP_STATUS"
echo "daemon $STOP_STATUS" >>"$LOG"

echo "== the metadata poll alone (--no-uevents): metadata-only changes"
# udev's watch makes the kernel send a change uevent on a disk LVM wrote and
# closed, so above the uevents saw the metadata-only changes first. Without
# them (no udevd, a PV on a device without the watch, lost events) the
# poll of the PVs' metadata headers must see them.
LOG=$OUT/daemon-poll.log
"$KEEL" run -c /etc/keel --textfile "$OUT/keel.prom" --resync 1h --poll 10s --no-uevents >"$LOG" 2>&1 &
dpid=$!
for i in $(seq 300); do [ "$(passes)" -ge 1 ] && break; sleep 0.1; done
quiet 12 || flunk "poll: the daemon did not go quiet after its start"
# The first poll (10 s after the start) reads every PV's stamp for the first
# time. The start pass's stamps, checked against every VG's seqno, are its
# baseline, so nothing changed means no pass; without the baseline every PV
# is new there and a full pass runs (docs/benchmark-history.md has its cost).
n=$(passes)
[ "$n" = 1 ] && pass "poll: no pass at the first poll after the start" ||
	flunk "poll: $n passes by the first poll after the start, want 1: $(grep 'pass done' "$LOG" | grep -o 'why=\("[^"]*"\|[^ ]*\)' | tr '\n' ';')"
# vg_seqno as the daemon reads it: the fixture of probes.VGSeqnos.
lvm vgs --reportformat json -o vg_name,vg_seqno >"$OUT/vgs-seqno.json" 2>&1
WANT_WHY="lvm metadata changed"
change "poll: lvcreate -an" lvcreate -q -y -an -Zn -L 32M -n new3 sigvg
change "poll: lvextend (inactive LV)" lvextend -q -y -L +32M sigvg/new3
change "poll: lvremove (inactive LV)" lvremove -q -y sigvg/new3
unset WANT_WHY
dd if="$hd" of="$OUT/pv-hdd1.bin" bs=4096 count=2 iflag=direct status=none
stop_daemon $dpid && pass "poll: daemon $STOP_STATUS" || flunk "poll: daemon $STOP_STATUS"
echo "daemon $STOP_STATUS" >>"$LOG"
kill $mon
exit $fail
