#!/usr/bin/env bash
# The guest part of `make bench` (e2e/bench.sh): one boot of the test guest
# (nvme0 20G, hdd1 60G, ssd2 8G, nvme3 4G, 3G RAM). Needs, in the share:
# stacks.sh and scale.sh (e2e/scenarios), vdo-on-bcache.cue (examples),
# bcache.cue (e2e/apply/desired), bench.env (ROUNDS, DAEMON_SECONDS,
# REACT_ROUNDS) and $KEEL.
#
# The same measurements run at several sizes of one host, each block opened
# by a line "size TAG LVS ACTIVE" (LVs on the host, of them active):
#   50        examples/vdo-on-bcache.cue converged, 48 VM disks on vdovg
#             (the VG stacked on the VDO LV), all active: rounds, daemon
#   2000      vdovg grown to 2,000 VM disks, 50 of them active: rounds, daemon
#   bcache    the VDO stack removed, bcache.cue: the bcache reaction
#   2000-thin a thin pool with 2,000 thin VM disks (50 active) on nvme3,
#             beside bcache: rounds, the bcache reaction again
# The disks beyond 50 are made by e2e/scenarios/scale.sh from generated LVM
# metadata; "build TAG SECONDS" is how long that took.
#
# Prints result lines "KEY VALUE..." that e2e/bench/report reads:
#   probecmd N ARGV...      the Nth command of keel's probe pass
#   probe N SECONDS         one run of it alone
#   check SECONDS           one `keel check` process, whole (the desired state
#                           from the desired-state cache: unchanged since the
#                           first check)
#   check-timing PHASES     that process's KEEL_TIMING line: when its desired
#                           state, probe pass, plan and report were done, in ms
#                           since its main started (raw outputs only)
#   check-cold SECONDS      `keel check` with KEEL_CACHE_DIR=off: the desired
#                           state validated by CUE, as after a change
#   pass DURATION           keel's in-process probe pass (keel snapshot -v)
#   check-exec SECONDS      `keel check` with KEEL_DM_IOCTL=off (dmsetup run as
#                           processes, as before the in-process dm ioctls)
#   pass-exec DURATION      the probe pass the same way
#   passop DURATION OP      the last round's ten slowest operations in the pass
#   start SECONDS           `keel version`: a keel process start and exit
#   frmem SECONDS           keel's `lvm fullreport` alone with its output into a
#                           file on a tmpfs, where the probe commands' runs
#                           discard theirs (/dev/null): what any reader of the
#                           report pays to receive it, as keel's memfd does
#   lvs SECONDS             `lvs` alone
#   status SECONDS          `keel status`: start, probe pass, the text view
#   vet SECONDS             `keel vet -c /etc/keel`: start + load of the desired state
#   check-node SECONDS      `keel check --node` of a snapshot of this host: start,
#                           load, replayed probe pass, plan and report, no commands
#   daemon-* VALUE          the idle window (see below; daemon-cpu is keel's own
#                           CPU, daemon-cpu-children that of the commands it ran)
#   react-config MS, react-bcache MS
set -uo pipefail
. "$SHARE/stacks.sh"
. "$SHARE/scale.sh"
. "$SHARE/bench.env"
nv=$(disk nvme0) || exit 2
hd=$(disk hdd1) || exit 2
ssd=$(disk ssd2) || exit 2
thin_disk=$(disk nvme3) || exit 2
lvm_conf_save
# The kernel's options go with the figures (mitigations=off: docs/testing.md).
echo "cmdline $(cat /proc/cmdline)"
now() { date +%s%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f", (b - a) / 1e9 }'; }
# wait_ms SECONDS T0 CMD...: poll CMD every 20 ms; print ms since T0 (ns).
wait_ms() {
	local limit=$1 t0=$2 t
	shift 2
	while :; do
		t=$(now)
		if "$@" >/dev/null 2>&1; then
			echo $(((t - t0) / 1000000))
			return 0
		fi
		[ $(((t - t0) / 1000000000)) -ge "$limit" ] && return 1
		sleep 0.02
	done
}
reads() { [ "$(cat "$1")" = "$2" ]; }
# desired FILE: FILE into /etc/keel with the bcache backing device given by
# its UUID (a by-id path resolves only when the device is also an LVM PV).
desired() {
	sed "s|\"/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_hdd1\"|\"$(cat /sys/block/bcache0/bcache/backing_dev_uuid)\"|" \
		"$1" >"/etc/keel/${1##*/}"
}
mkdir -p /etc/keel
# A file in memory for the report's output (frmem), as keel's memfd is.
mkdir -p /mnt/benchmem && mount -t tmpfs -o size=256m tmpfs /mnt/benchmem || exit 2

echo "== converge examples/vdo-on-bcache.cue"
stack_bcache "$ssd" "$hd" || exit 2
desired "$SHARE/vdo-on-bcache.cue"
cp "$KEEL" /tmp/keel # run from RAM, not from the 9p share
K=/tmp/keel
"$K" apply -c /etc/keel >"$OUT/apply.txt" 2>&1 || { echo "apply failed:"; cat "$OUT/apply.txt"; exit 2; }
"$K" check -c /etc/keel >"$OUT/check.txt" 2>&1
echo "check-exit $?"

# size TAG: the host's size for the blocks that follow.
size() {
	echo "== size $1"
	echo "size $1 $(lvs --noheadings -o lv_name 2>/dev/null | wc -l) $(lvs --noheadings -o lv_active 2>/dev/null | grep -c active)"
}

# timed KEY CMD...: one run of CMD, its wall time as "KEY SECONDS".
timed() {
	local key=$1 t0 t1
	shift
	t0=$(now)
	"$@" >/dev/null 2>&1 </dev/null
	t1=$(now)
	echo "$key $(secs "$t0" "$t1")"
}

# check_round: one `keel check`, its wall time and its KEEL_TIMING line.
check_round() {
	local t0 t1
	t0=$(now)
	KEEL_TIMING=1 "$K" check -c /etc/keel >/dev/null 2>/tmp/check-timing.txt
	t1=$(now)
	echo "check $(secs "$t0" "$t1")"
	sed -n 's/^keel check: timing: ended, in ms since main started: /check-timing /p' /tmp/check-timing.txt
}

# frmem_round: keel's lvm fullreport argv alone with its output into a
# tmpfs file, "frmem SECONDS".
frmem_round() {
	local line argv t0 t1
	line=$(grep -m1 $'^lvm\x1ffullreport\x1f' /tmp/probe.argv) || return 0
	IFS=$'\x1f' read -r -a argv <<<"$line"
	rm -f /mnt/benchmem/report
	t0=$(now)
	LC_ALL=C LVM_SUPPRESS_FD_WARNINGS=1 "${argv[@]}" >/mnt/benchmem/report 2>/dev/null </dev/null
	t1=$(now)
	echo "frmem $(secs "$t0" "$t1")"
}

# rounds TAG: keel check against each probe command alone, ROUNDS times,
# and the other processes of the table.
rounds() {
	local n=0 i r t0 t1 line argv
	echo "== keel check against each probe command alone"
	rm -f /tmp/probe.cmds
	"$K" apply --dry-run -c /etc/keel --command-log /tmp/probe.cmds >/dev/null 2>&1
	# one argv per line, JSON: ["lvm","fullreport",...]; arguments hold no '","'.
	sed -e 's/^\["//' -e 's/"\]$//' -e 's/","/\x1f/g' /tmp/probe.cmds | sort -u >/tmp/probe.argv
	while IFS= read -r line; do
		n=$((n + 1))
		echo "probecmd $n ${line//$'\x1f'/ }"
	done </tmp/probe.argv
	[ "$n" -gt 0 ] || { echo "no probe commands in keel's command log"; return 2; }
	"$K" snapshot -o /tmp/node.txtar >/dev/null 2>&1 || { echo "snapshot failed"; return 2; }
	gzip -9 -n </tmp/node.txtar >"$OUT/node-$1.txtar.gz" # the host at this size, in the raw outputs (BENCH_RAW)
	for r in $(seq "$ROUNDS"); do
		# keel check runs after the probe commands in odd rounds and
		# before them in even ones: which command runs right after which
		# moved the ratio by more than its target's margin
		# (docs/benchmark-history.md), and no order should be favoured.
		[ $((r % 2)) = 0 ] && check_round
		# the report into memory runs before the report into /dev/null
		# in even rounds and after it in odd ones: the second of two
		# runs in a row can find more in the caches.
		[ $((r % 2)) = 0 ] && frmem_round
		i=0
		while IFS=$'\x1f' read -r -a argv; do
			i=$((i + 1))
			t0=$(now)
			LC_ALL=C LVM_SUPPRESS_FD_WARNINGS=1 "${argv[@]}" >/dev/null 2>&1 </dev/null
			t1=$(now)
			echo "probe $i $(secs "$t0" "$t1")"
		done </tmp/probe.argv
		[ $((r % 2)) = 1 ] && frmem_round
		[ $((r % 2)) = 1 ] && check_round
		"$K" snapshot -v -o /dev/null 2>"$OUT/snapshot-v.txt"
		awk '/probe pass/ { print "pass", $5 }' "$OUT/snapshot-v.txt"
		# the last round's ten slowest operations inside the pass
		[ "$r" = "$ROUNDS" ] && awk '/^ / { d = $1; $1 = ""; print "passop", d, substr($0, 2) }' "$OUT/snapshot-v.txt"
		timed check-cold env KEEL_CACHE_DIR=off "$K" check -c /etc/keel
		timed check-exec env KEEL_DM_IOCTL=off "$K" check -c /etc/keel
		KEEL_DM_IOCTL=off "$K" snapshot -v -o /dev/null 2>&1 | awk '/probe pass/ { print "pass-exec", $5 }'
		timed start "$K" version
		timed vet "$K" vet -c /etc/keel
		timed check-node "$K" check -c /etc/keel --node /tmp/node.txtar
		timed lvs env LC_ALL=C LVM_SUPPRESS_FD_WARNINGS=1 lvs
		timed status "$K" status
	done
}

# Every command the daemon runs goes through a logging shim.
shim=/tmp/keel-shim
mkdir -p "$shim"
cat >"$shim/.run" <<'SHIM'
#!/bin/sh
n=$(basename "$0")
printf '%s %s\n' "$n" "$*" >>/tmp/keel-shim.log
PATH=${PATH#/tmp/keel-shim:}
exec "$n" "$@"
SHIM
chmod 755 "$shim/.run"
for c in lvm lvs vgs pvs lvcreate lvchange lvconvert lvextend lvresize lvremove lvrename pvcreate pvchange \
	pvmove pvscan vgcreate vgchange vgextend vgreduce vgscan lvmconfig dmsetup blkid blkdiscard \
	make-bcache wipefs udevadm vdostats; do
	ln -sf .run "$shim/$c"
done
# The reaction polls fork nothing but sleep (under TCG a fork costs tens of
# ms): NS is set from bash's own clock and the value is read by a builtin.
ns() { local t=${EPOCHREALTIME/./}; NS=$((10#$t * 1000)); }
# react_ms SECONDS FILE VALUE: after "ns; t0=$NS", print the ms from t0 to
# the poll that saw FILE read VALUE (every 20 ms; an upper bound).
react_ms() {
	local v
	while :; do
		ns
		read -r v <"$2" 2>/dev/null
		if [ "$v" = "$3" ]; then
			echo $(((NS - t0) / 1000000))
			return 0
		fi
		[ $(((NS - t0) / 1000000000)) -ge "$1" ] && return 1
		sleep 0.02
	done
}

# daemon TAG: the daemon on the converged host (vdo-on-bcache.cue), its log
# in $OUT/daemon-TAG.log: the idle window, then the reaction to a
# desired-state change.
daemon() {
	local log=$OUT/daemon-$1.log dpid p0 c0 a0 k0 j0 t0 k1 j1 t1 p1 a1 mut hz r from to f ms
	echo "== the daemon on the converged host"
	: >/tmp/keel-shim.log
	PATH=$shim:$PATH "$K" run -c /etc/keel --textfile /tmp/keel.prom --log-level debug >"$log" 2>&1 &
	dpid=$!
	passes() { grep -c 'pass done' "$log"; }
	first_pass() { [ "$(passes)" -ge 1 ]; }
	passes_over() { [ "$(passes)" -gt "$1" ]; }
	wait_ms 600 "$(now)" first_pass >/dev/null || { echo "daemon: no first pass"; cat "$log"; return 2; }
	sleep 2
	# /proc/PID/stat: utime+stime are keel's own threads (fields 14, 15);
	# cutime+cstime its waited-for children, the commands it ran (16, 17).
	ticks() { awk '{ print $14 + $15 }' "/proc/$dpid/stat"; }
	cticks() { awk '{ print $16 + $17 }' "/proc/$dpid/stat"; }
	hz=$(getconf CLK_TCK 2>/dev/null || echo 100)
	p0=$(passes) c0=$(wc -l </tmp/keel-shim.log) a0=$(grep -c 'action ' "$log")
	k0=$(ticks) j0=$(cticks) t0=$(now)
	sleep "$DAEMON_SECONDS"
	k1=$(ticks) j1=$(cticks) t1=$(now)
	p1=$(passes) a1=$(grep -c 'action ' "$log")
	tail -n +$((c0 + 1)) /tmp/keel-shim.log >"$OUT/daemon-window-$1.cmds"
	mut=$(grep -cE '^(lvcreate|lvchange|lvconvert|lvextend|lvresize|lvremove|lvrename|pvcreate|pvchange|pvmove|vgcreate|vgchange|vgextend|vgreduce|blkdiscard|make-bcache|wipefs) |^lvm (lvcreate|lvchange|lvconvert|lvextend|lvresize|lvremove|lvrename|pvcreate|pvchange|pvmove|vgcreate|vgchange|vgextend|vgreduce) |^dmsetup (create|remove|reload|load|suspend|resume)' "$OUT/daemon-window-$1.cmds")
	echo "daemon-window $(secs "$t0" "$t1")"
	echo "daemon-cpu $(awk -v a="$k0" -v b="$k1" -v hz="$hz" 'BEGIN { printf "%.3f", (b - a) / hz }')"
	echo "daemon-cpu-children $(awk -v a="$j0" -v b="$j1" -v hz="$hz" 'BEGIN { printf "%.3f", (b - a) / hz }')"
	echo "daemon-passes $((p1 - p0))"
	echo "daemon-commands $(wc -l <"$OUT/daemon-window-$1.cmds")"
	echo "daemon-commands-total $(wc -l </tmp/keel-shim.log)" # the shim works: the first pass ran through it
	echo "daemon-mutating $mut"
	echo "daemon-actions $((a1 - a0))"
	echo "daemon-hwm-kib $(awk '/^VmHWM/ { print $2 }' "/proc/$dpid/status")"
	echo "daemon-rss-kib $(awk '/^VmRSS/ { print $2 }' "/proc/$dpid/status")"

	echo "== reaction to a desired-state change (writebackPercent 40 <-> 30)"
	# Each change reaches an idle daemon: after the value reads back, the round
	# waits for the pass that the change started to end (the full pass after
	# the fast path, which may rewrite keel's udev rule), then 1 s. A change
	# made while a pass runs waits for it: that pass's length is in the table.
	f=/etc/keel/vdo-on-bcache.cue
	for r in $(seq "$REACT_ROUNDS"); do
		if [ $((r % 2)) = 1 ]; then from=40 to=30; else from=30 to=40; fi
		p0=$(passes)
		sed "s/writebackPercent: $from/writebackPercent: $to/" "$f" >/etc/keel/.new && ns && t0=$NS && mv /etc/keel/.new "$f"
		if ms=$(react_ms 30 /sys/block/bcache0/bcache/writeback_percent "$to"); then
			echo "react-config $ms"
		else
			echo "react-config-timeout $r"
		fi
		wait_ms 120 "$(now)" passes_over "$p0" >/dev/null || echo "react-config: no pass ended within 120 s of round $r"
		sleep 1
	done
	# Back to 40 for the next block.
	sed -i "s/writebackPercent: 30/writebackPercent: 40/" "$f"
	wait_ms 30 "$(now)" reads /sys/block/bcache0/bcache/writeback_percent 40 >/dev/null
	kill -TERM $dpid
	wait $dpid
}

# bcache_react TAG: the daemon on bcache.cue, its log in
# $OUT/daemon2-TAG.log: the reaction to a bcache registration.
bcache_react() {
	local log=$OUT/daemon2-$1.log dpid r p0 cset gone t0 i ms
	echo "== reaction to a bcache registration"
	PATH=$shim:$PATH "$K" run -c /etc/keel --textfile /tmp/keel.prom --log-level debug >"$log" 2>&1 &
	dpid=$!
	wait_ms 300 "$(now)" reads /sys/block/bcache0/bcache/sequential_cutoff 0.0k >/dev/null || { echo "daemon2 did not converge"; return 2; }
	passes2_over() { [ "$(grep -c 'pass done' "$log")" -gt "$1" ]; }
	# The first round, too, starts with the daemon idle: its start pass over.
	wait_ms 300 "$(now)" passes2_over 0 >/dev/null || { echo "daemon2: no first pass"; return 2; }
	sleep 1
	for r in $(seq "$REACT_ROUNDS"); do
		p0=$(grep -c 'pass done' "$log")
		cset=$(bcache_cset "$ssd")
		echo 1 >/sys/block/bcache0/bcache/stop
		echo 1 >"/sys/fs/bcache/$cset/unregister"
		# Poll every 20 ms: bcache0 goes away (the stop is asynchronous), then
		# comes back as a new device, registered by us every 0.5 s or first by
		# bcache-tools' udev rule, which runs when the released disks change.
		# t0 is the poll that sees the new device; who registered it does not
		# matter, and registering while the old one still goes away is EBUSY.
		gone=0 t0= i=0
		while [ $i -lt 1500 ]; do
			if [ ! -e /sys/block/bcache0/bcache ]; then
				gone=1
			elif [ $gone = 1 ]; then
				ns && t0=$NS
				break
			fi
			if [ $gone = 1 ] && [ $((i % 25)) = 24 ]; then
				bcache_register "$ssd"
				bcache_register "$hd"
			fi
			i=$((i + 1))
			sleep 0.02
		done
		if [ -z "$t0" ]; then
			echo "react-bcache-timeout $r"
			echo "react-bcache: round $r: bcache0 gone $gone, no new device in 30 s"
		elif ms=$(react_ms 30 /sys/block/bcache0/bcache/sequential_cutoff 0.0k); then
			echo "react-bcache $ms"
		else
			echo "react-bcache-timeout $r"
		fi
		wait_ms 120 "$(now)" passes2_over "$p0" >/dev/null || echo "react-bcache: no pass ended within 120 s of round $r"
		sleep 1
	done
	kill -TERM $dpid
	wait $dpid
}

# ~50 LVs: 48 VM disks on vdovg, all active. vdovg, as keel made it, is
# first made again on a PV with room for the metadata of 2,000 LVs.
t0=$(now)
scale_room vdovg || { echo "scale_room vdovg failed"; exit 2; }
scale_linear vdovg 48 48 || { echo "scale_linear vdovg 48 failed"; exit 2; }
echo "build 50 $(secs "$t0" "$(now)")"
size 50
rounds 50 || exit 2
daemon 50 || exit 2

# 2,000 LVs: vdovg's VM disks grown to 2,000 (the 48 keep their extents and
# stay active), 50 active.
t0=$(now)
scale_linear vdovg 2000 50 || { echo "scale_linear vdovg 2000 failed"; exit 2; }
echo "build 2000 $(secs "$t0" "$(now)")"
size 2000
rounds 2000 || exit 2
daemon 2000 || exit 2

echo "== the VDO stack removed, the desired state cut to bcache"
vgchange -an -q vdovg >/dev/null 2>&1
vgremove -ff -y vdovg >/dev/null 2>&1
vgremove -ff -y vdosplit >/dev/null 2>&1
rm -f /etc/keel/*.cue
desired "$SHARE/bcache.cue"
size bcache
bcache_react bcache || exit 2

# 2,000 thin VM disks in one pool, 50 active, beside the bcache.
t0=$(now)
scale_thin "$thin_disk" thinscale 2000 50 || { echo "scale_thin failed"; exit 2; }
echo "build 2000-thin $(secs "$t0" "$(now)")"
size 2000-thin
rounds 2000-thin || exit 2
bcache_react 2000-thin || exit 2
echo "== done"
exit 0
