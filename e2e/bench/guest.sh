#!/usr/bin/env bash
# The guest part of `make bench` (e2e/bench.sh): one boot of the test guest
# (nvme0 20G, hdd1 60G, ssd2 8G, 3G RAM). Needs, in the share: stacks.sh
# (e2e/scenarios), vdo-on-bcache.cue (examples), bcache.cue (e2e/apply/desired),
# bench.env (ROUNDS, DAEMON_SECONDS, REACT_ROUNDS) and $KEEL.
#
# Prints result lines "KEY VALUE..." that e2e/bench/report reads:
#   probecmd N ARGV...      the Nth command of keel's probe pass
#   probe N SECONDS         one run of it alone
#   check SECONDS           one `keel check` process, whole (the desired state
#                           from the desired-state cache: unchanged since the
#                           first check)
#   check-cold SECONDS      `keel check` with KEEL_CACHE_DIR=off: the desired
#                           state validated by CUE, as after a change
#   pass DURATION           keel's in-process probe pass (keel snapshot -v)
#   check-exec SECONDS      `keel check` with KEEL_DM_IOCTL=off (dmsetup run as
#                           processes, as before the in-process dm ioctls)
#   pass-exec DURATION      the probe pass the same way
#   passop DURATION OP      the last round's ten slowest operations in the pass
#   start SECONDS           `keel version`: a keel process start and exit
#   vet SECONDS             `keel vet -c /etc/keel`: start + load of the desired state
#   check-node SECONDS      `keel check --node` of a snapshot of this host: start,
#                           load, replayed probe pass, plan and report, no commands
#   daemon-* VALUE          the idle window (see below; daemon-cpu is keel's own
#                           CPU, daemon-cpu-children that of the commands it ran)
#   react-config MS, react-bcache MS
set -uo pipefail
. "$SHARE/stacks.sh"
. "$SHARE/bench.env"
nv=$(disk nvme0) || exit 2
hd=$(disk hdd1) || exit 2
ssd=$(disk ssd2) || exit 2
lvm_conf_save
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

echo "== converge examples/vdo-on-bcache.cue"
stack_bcache "$ssd" "$hd" || exit 2
desired "$SHARE/vdo-on-bcache.cue"
cp "$KEEL" /tmp/keel # run from RAM, not from the 9p share
K=/tmp/keel
"$K" apply -c /etc/keel >"$OUT/apply.txt" 2>&1 || { echo "apply failed:"; cat "$OUT/apply.txt"; exit 2; }
"$K" check -c /etc/keel >"$OUT/check.txt" 2>&1
echo "check-exit $?"

echo "== keel check against each probe command alone"
"$K" apply --dry-run -c /etc/keel --command-log /tmp/probe.cmds >/dev/null 2>&1
# one argv per line, JSON: ["lvm","fullreport",...]; arguments hold no '","'.
sed -e 's/^\["//' -e 's/"\]$//' -e 's/","/\x1f/g' /tmp/probe.cmds | sort -u >/tmp/probe.argv
n=0
while IFS= read -r line; do
	n=$((n + 1))
	echo "probecmd $n ${line//$'\x1f'/ }"
done </tmp/probe.argv
[ "$n" -gt 0 ] || { echo "no probe commands in keel's command log"; exit 2; }
"$K" snapshot -o /tmp/node.txtar >/dev/null 2>&1 || { echo "snapshot failed"; exit 2; }
# timed KEY CMD...: one run of CMD, its wall time as "KEY SECONDS".
timed() {
	local key=$1 t0 t1
	shift
	t0=$(now)
	"$@" >/dev/null 2>&1 </dev/null
	t1=$(now)
	echo "$key $(secs "$t0" "$t1")"
}
for r in $(seq "$ROUNDS"); do
	i=0
	while IFS=$'\x1f' read -r -a argv; do
		i=$((i + 1))
		t0=$(now)
		LC_ALL=C LVM_SUPPRESS_FD_WARNINGS=1 "${argv[@]}" >/dev/null 2>&1 </dev/null
		t1=$(now)
		echo "probe $i $(secs "$t0" "$t1")"
	done </tmp/probe.argv
	t0=$(now)
	"$K" check -c /etc/keel >/dev/null 2>&1
	t1=$(now)
	echo "check $(secs "$t0" "$t1")"
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
done

echo "== the daemon on the converged host"
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
: >/tmp/keel-shim.log
PATH=$shim:$PATH "$K" run -c /etc/keel --textfile /tmp/keel.prom --log-level debug >"$OUT/daemon.log" 2>&1 &
dpid=$!
passes() { grep -c 'pass done' "$OUT/daemon.log"; }
first_pass() { [ "$(passes)" -ge 1 ]; }
wait_ms 300 "$(now)" first_pass >/dev/null || { echo "daemon: no first pass"; cat "$OUT/daemon.log"; exit 2; }
sleep 2
# /proc/PID/stat: utime+stime are keel's own threads (fields 14, 15);
# cutime+cstime its waited-for children, the commands it ran (16, 17).
ticks() { awk '{ print $14 + $15 }' "/proc/$dpid/stat"; }
cticks() { awk '{ print $16 + $17 }' "/proc/$dpid/stat"; }
hz=$(getconf CLK_TCK 2>/dev/null || echo 100)
p0=$(passes) c0=$(wc -l </tmp/keel-shim.log) a0=$(grep -c 'action ' "$OUT/daemon.log")
k0=$(ticks) j0=$(cticks) t0=$(now)
sleep "$DAEMON_SECONDS"
k1=$(ticks) j1=$(cticks) t1=$(now)
p1=$(passes) a1=$(grep -c 'action ' "$OUT/daemon.log")
tail -n +$((c0 + 1)) /tmp/keel-shim.log >"$OUT/daemon-window.cmds"
mut=$(grep -cE '^(lvcreate|lvchange|lvconvert|lvextend|lvresize|lvremove|lvrename|pvcreate|pvchange|pvmove|vgcreate|vgchange|vgextend|vgreduce|blkdiscard|make-bcache|wipefs) |^lvm (lvcreate|lvchange|lvconvert|lvextend|lvresize|lvremove|lvrename|pvcreate|pvchange|pvmove|vgcreate|vgchange|vgextend|vgreduce) |^dmsetup (create|remove|reload|load|suspend|resume)' "$OUT/daemon-window.cmds")
echo "daemon-window $(secs "$t0" "$t1")"
echo "daemon-cpu $(awk -v a="$k0" -v b="$k1" -v hz="$hz" 'BEGIN { printf "%.3f", (b - a) / hz }')"
echo "daemon-cpu-children $(awk -v a="$j0" -v b="$j1" -v hz="$hz" 'BEGIN { printf "%.3f", (b - a) / hz }')"
echo "daemon-passes $((p1 - p0))"
echo "daemon-commands $(wc -l <"$OUT/daemon-window.cmds")"
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
passes_over() { [ "$(passes)" -gt "$1" ]; }
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
for r in $(seq "$REACT_ROUNDS"); do
	if [ $((r % 2)) = 1 ]; then from=40 to=30; else from=30 to=40; fi
	p0=$(passes)
	sed "s/writebackPercent: $from/writebackPercent: $to/" "$f" >/etc/keel/.new && ns && t0=$NS && mv /etc/keel/.new "$f"
	if ms=$(react_ms 30 /sys/block/bcache0/bcache/writeback_percent "$to"); then
		echo "react-config $ms"
	else
		echo "react-config-timeout $r"
	fi
	wait_ms 60 "$(now)" passes_over "$p0" >/dev/null || echo "react-config: no pass ended within 60 s of round $r"
	sleep 1
done
kill -TERM $dpid
wait $dpid

echo "== reaction to a bcache registration (bcache only; the VDO stack is removed first)"
vgchange -an vdovg >/dev/null 2>&1
vgremove -ff -y vdovg >/dev/null 2>&1
vgremove -ff -y vdosplit >/dev/null 2>&1
rm -f /etc/keel/*.cue
desired "$SHARE/bcache.cue"
PATH=$shim:$PATH "$K" run -c /etc/keel --textfile /tmp/keel.prom --log-level debug >"$OUT/daemon2.log" 2>&1 &
dpid=$!
wait_ms 120 "$(now)" reads /sys/block/bcache0/bcache/sequential_cutoff 0.0k >/dev/null || { echo "daemon2 did not converge"; exit 2; }
passes2_over() { [ "$(grep -c 'pass done' "$OUT/daemon2.log")" -gt "$1" ]; }
# The first round, too, starts with the daemon idle: its start pass over.
wait_ms 120 "$(now)" passes2_over 0 >/dev/null || { echo "daemon2: no first pass"; exit 2; }
sleep 1
for r in $(seq "$REACT_ROUNDS"); do
	p0=$(grep -c 'pass done' "$OUT/daemon2.log")
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
	wait_ms 60 "$(now)" passes2_over "$p0" >/dev/null || echo "react-bcache: no pass ended within 60 s of round $r"
	sleep 1
done
kill -TERM $dpid
wait $dpid
echo "== done"
exit 0
