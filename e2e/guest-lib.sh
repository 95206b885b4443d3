# Helpers for scenario scripts running inside keel's test guest. vm-run.sh
# copies this file into the share as lib.sh and runs every scenario with
# BASH_ENV pointing at it, so the functions below are always defined.
#
#   disk SERIAL      /dev/disk/by-id path of the disk with that serial
#   disks            the share's disk list: "serial kind size" lines
#   step CMD...      run CMD, logging the command line, its time and status
#   versions         log uname -r, lvm version, vdoformat --version, dpkg versions
#   alive PID        whether PID runs (a zombie does not)
#   stop_daemon PID  SIGTERM a daemon this shell started, wait for it, judge its exit
#
# Variables: KEEL (the static keel binary, when the host put one in the share),
# OUT (a directory in the share whose files the host gets back), SHARE.

export SHARE=${SHARE:-/mnt/host}
export OUT=${OUT:-$SHARE/out}
if [ -z "${KEEL:-}" ] && [ -x "$SHARE/keel" ]; then
	export KEEL=$SHARE/keel
fi

# disks prints the disk list the host wrote: one "serial kind size" line each.
disks() { cat "$SHARE/disks.txt" 2>/dev/null; }

# disk SERIAL prints the stable /dev/disk/by-id path of a disk given to the
# guest (SCSI sdX names change between boots; serials do not).
disk() {
	local serial=$1 kind path
	kind=$(awk -v s="$serial" '$1==s{print $2}' "$SHARE/disks.txt" 2>/dev/null)
	case $kind in
	nvme) path=/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_$serial ;;
	hdd | ssd | trimkeep) path=/dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_$serial ;;
	vdisk) path=/dev/disk/by-id/virtio-$serial ;;
	*)
		echo "disk: no disk with serial $serial (see disks.txt)" >&2
		return 1
		;;
	esac
	local i
	for i in $(seq 50); do
		[ -b "$path" ] && break
		sleep 0.1
	done
	if [ ! -b "$path" ]; then
		echo "disk: $path does not exist" >&2
		return 1
	fi
	echo "$path"
}

# step runs a command, printing it first and its duration and status after.
step() {
	local t0 t1 rc
	printf '+ %s\n' "$*"
	t0=$(cut -d' ' -f1 /proc/uptime)
	"$@"
	rc=$?
	t1=$(cut -d' ' -f1 /proc/uptime)
	awk -v a="$t0" -v b="$t1" -v rc="$rc" 'BEGIN{printf "  (%.2fs rc=%d)\n", b-a, rc}'
	return "$rc"
}

# versions logs the versions every e2e run records.
versions() {
	echo "== versions"
	echo "kernel: $(uname -r)"
	lvm version 2>&1 | grep -v Configuration | sed 's/^ */lvm: /'
	echo "vdoformat: $(vdoformat --version 2>&1)"
	dpkg-query -W lvm2 dmsetup vdo bcache-tools thin-provisioning-tools util-linux udev kmod 2>&1 | sed 's/^/dpkg: /'
	dmsetup targets 2>&1 | sed 's/^/dm target: /'
	echo "=="
}

# alive PID: whether the process runs. A child that died but was not waited
# for yet is a zombie: kill -0 still succeeds on it, its state in
# /proc/PID/stat (the field after the parenthesised command name, proc(5))
# is Z.
alive() {
	local st
	st=$(sed -n 's/^[0-9]* (.*) \([A-Za-z]\) .*/\1/p' "/proc/$1/stat" 2>/dev/null)
	[ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

# stop_daemon PID: stop a daemon this shell started in the background (keel
# run) and judge how it ended: it must still run, and exit 0 within 30 s of
# SIGTERM (keel run's status after SIGTERM, docs/cli.md). Sets STOP_STATUS
# to what happened; fails when the daemon had died before, or exited
# otherwise, or had to be killed. Call it in the shell that started the
# daemon (wait knows only its own children), not in $(...).
stop_daemon() {
	local pid=$1 rc i
	if ! alive "$pid"; then
		wait "$pid"
		rc=$?
		STOP_STATUS="it had died before SIGTERM (exit $rc)"
		return 1
	fi
	kill -TERM "$pid"
	for i in $(seq 300); do
		alive "$pid" || break
		sleep 0.1
	done
	if alive "$pid"; then
		kill -KILL "$pid"
		wait "$pid"
		STOP_STATUS="still running 30 s after SIGTERM (killed)"
		return 1
	fi
	wait "$pid"
	rc=$?
	STOP_STATUS="exit $rc after SIGTERM"
	[ "$rc" = 0 ]
}
