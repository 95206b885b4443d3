#!/usr/bin/env bash
# Boots keel's qemu test guest with hypervisor-like disks, runs one scenario
# script in it and exits with the script's status.
#
# Usage: e2e/vm-run.sh [options] SCRIPT [FILE...]
#        e2e/vm-run.sh [options] --shell
#
# Disks (sparse files; each SIZE may be followed by :SERIAL, else the serial is
# the kind plus the disk's position, e.g. nvme0 hdd1 ssd2):
#   --nvme SIZE     emulated NVMe          -> /dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_SERIAL
#   --hdd SIZE      SCSI, 7200 rpm         -> /dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_SERIAL
#   --ssd SIZE      SCSI, non-rotational   -> /dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_SERIAL
#   --trimkeep SIZE SCSI, non-rotational, accepts UNMAP and keeps the bytes
#                   (qemu discard=ignore), as an SSD whose TRIM does not zero
#                                          -> /dev/disk/by-id/scsi-0QEMU_QEMU_HARDDISK_SERIAL
#   --vdisk SIZE    virtio-blk             -> /dev/disk/by-id/virtio-SERIAL
# In the guest, `disk SERIAL` prints that path (see e2e/guest-lib.sh).
# Without any disk option the guest gets --nvme 20G --hdd 40G.
#
# Options:
#   --flavour fast|systemd  guest flavour (default fast)
#   --keel PATH        put a static keel binary in the share ($KEEL in the guest)
#   --share DIR        use DIR as the 9p share and keep it (default: a temporary one)
#   --disk-dir DIR     keep disk images (and the systemd root) in DIR; images that
#                      already exist there are reused, which is how a reboot is done
#   --mem SIZE         guest RAM (default 2G)     --smp N   CPUs (default 2, or $KEEL_GUEST_SMP)
#   --timeout SECONDS  hard limit for the boot and the script (default 600)
#   --accel auto|tcg|kvm  (default auto: KVM only if a cached probe boots with it)
#   --shell            interactive shell in the guest instead of a script
#   --quiet            do not copy the console to stdout
#   --lock-wait SECONDS  how long to wait for another guest to finish (default 3600)
#
# Files left in the share: console.log, guest.log (the script's output),
# exitcode, dmesg.txt, out/ (what the script wrote to $OUT).
# Exit status: the script's, 124 when the timeout fired, 125 when the guest
# wrote no exit code (panic, crash), 2 when the guest could not be started.
# qemu runs under `flock /tmp/keel-qemu.lock`: one guest at a time per machine.
# Waiting launchers line up first-come first-served (tickets in
# /tmp/keel-qemu.queue), since flock alone wakes an arbitrary waiter.
# KEEL_QEMU_LOCK names another lock file (its queue sits beside it), and
# KEEL_GUEST_SMP the default CPU count: run-e2e.sh runs two lanes of
# one-CPU guests side by side, each lane with its own lock.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${KEEL_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/keel-e2e}
lock=${KEEL_QEMU_LOCK:-/tmp/keel-qemu.lock}

flavour=fast keel= share= disk_dir= mem=2G smp=${KEEL_GUEST_SMP:-2} timeout_s=600 accel=auto shell= quiet= lock_wait=3600
disk_kinds=() disk_sizes=() disk_serials=()
script= files=()

die() {
	echo "vm-run.sh: $*" >&2
	exit 2
}
add_disk() { # add_disk KIND SIZE[:SERIAL]
	local size=${2%%:*} serial=
	[[ $2 == *:* ]] && serial=${2#*:}
	[ -n "$serial" ] || serial=$1${#disk_kinds[@]}
	[[ $size =~ ^[0-9]+[KMGT]?$ ]] || die "bad disk size $size"
	[[ $serial =~ ^[A-Za-z0-9_-]{1,20}$ ]] || die "bad disk serial $serial"
	disk_kinds+=("$1") disk_sizes+=("$size") disk_serials+=("$serial")
}

while [ $# -gt 0 ]; do
	case $1 in
	--nvme | --hdd | --ssd | --trimkeep | --vdisk)
		[ $# -ge 2 ] || die "$1 needs a size"
		add_disk "${1#--}" "$2"
		shift 2
		;;
	--flavour) flavour=${2:?}; shift 2 ;;
	--keel) keel=${2:?}; shift 2 ;;
	--share) share=${2:?}; shift 2 ;;
	--disk-dir) disk_dir=${2:?}; shift 2 ;;
	--mem) mem=${2:?}; shift 2 ;;
	--smp) smp=${2:?}; shift 2 ;;
	--timeout) timeout_s=${2:?}; shift 2 ;;
	--accel) accel=${2:?}; shift 2 ;;
	--shell) shell=1; shift ;;
	--quiet) quiet=1; shift ;;
	--lock-wait) lock_wait=${2:?}; shift 2 ;;
	-h | --help)
		sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'
		exit 0
		;;
	--*) die "unknown option $1 (see --help)" ;;
	*)
		if [ -z "$script" ] && [ -z "$shell" ]; then script=$1; else files+=("$1"); fi
		shift
		;;
	esac
done
[ -n "$script" ] || [ -n "$shell" ] || die "no script given (or --shell); see --help"
[ -z "$script" ] || [ -r "$script" ] || die "cannot read script $script"
case $flavour in fast | systemd) ;; *) die "unknown flavour $flavour" ;; esac
case $accel in auto | tcg | kvm) ;; *) die "unknown accel $accel" ;; esac
if [ ${#disk_kinds[@]} -eq 0 ]; then
	add_disk nvme 20G
	add_disk hdd 40G
fi

image=$("$here/image/build.sh" "$flavour") || die "building the $flavour guest failed"

# Fair queue in front of the lock: wait until this launcher's ticket is the
# oldest one whose owner is still alive, then take the lock as usual.
queue=${lock%.lock}.queue
ticket=
wait_turn() {
	mkdir -p "$queue"
	ticket=$queue/$(date +%s%N)-$$
	: >"$ticket"
	local deadline=$(($(date +%s) + lock_wait)) f first
	while :; do
		first=
		for f in $(ls "$queue" 2>/dev/null | sort); do
			if kill -0 "${f##*-}" 2>/dev/null; then
				first=$f
				break
			fi
			rm -f "$queue/$f"
		done
		[ "$first" != "${ticket##*/}" ] || return 0
		[ "$(date +%s)" -lt "$deadline" ] || die "waited ${lock_wait}s for other guests"
		sleep 1
	done
}

cleanup_dirs=()
cleanup() {
	[ -z "$ticket" ] || rm -f "$ticket"
	[ ${#cleanup_dirs[@]} -eq 0 ] || rm -rf "${cleanup_dirs[@]}"
}
trap cleanup EXIT
if [ -z "$share" ]; then
	share=$(mktemp -d "${TMPDIR:-/tmp}/keel-vm-share.XXXXXX")
	[ -n "$shell" ] || cleanup_dirs+=("$share")
fi
if [ -z "$disk_dir" ]; then
	disk_dir=$(mktemp -d "${TMPDIR:-/tmp}/keel-vm-disks.XXXXXX")
	cleanup_dirs+=("$disk_dir")
fi
mkdir -p "$share" "$disk_dir"
share=$(cd "$share" && pwd)
disk_dir=$(cd "$disk_dir" && pwd)
[[ $share != *,* ]] || die "the share path must not contain a comma: $share"

# The share: helpers, disk list, scenario, files; results from an earlier
# boot are cleared so a reboot's results are its own.
rm -f "$share/exitcode" "$share/guest.log" "$share/dmesg.txt" "$share/console.log" "$share/journal.txt"
mkdir -p "$share/out"
cp "$here/guest-lib.sh" "$share/lib.sh"
: >"$share/disks.txt"
for i in "${!disk_kinds[@]}"; do
	echo "${disk_serials[$i]} ${disk_kinds[$i]} ${disk_sizes[$i]}" >>"$share/disks.txt"
done
if [ -n "$keel" ]; then
	cp "$keel" "$share/keel"
	chmod 0755 "$share/keel"
fi
for f in ${files[@]+"${files[@]}"}; do cp -r "$f" "$share/"; done
if [ -n "$script" ]; then
	cp "$script" "$share/scenario.sh"
	cat >"$share/run.sh" <<'EOF'
# Written by vm-run.sh: logs versions, then runs scenario.sh with the helpers.
export BASH_ENV=/mnt/host/lib.sh
. /mnt/host/lib.sh
versions
echo "== scenario"
bash /mnt/host/scenario.sh
EOF
fi

# Disks: sparse files, created unless the disk directory already has them.
qemu_disks=()
scsi=
for i in "${!disk_kinds[@]}"; do
	kind=${disk_kinds[$i]} size=${disk_sizes[$i]} serial=${disk_serials[$i]}
	img=$disk_dir/$serial.img
	[ -e "$img" ] || truncate -s "$size" "$img"
	discard=unmap
	[ "$kind" = trimkeep ] && discard=ignore
	qemu_disks+=(-drive "if=none,id=d$i,file=$img,format=raw,cache=unsafe,discard=$discard,aio=threads")
	case $kind in
	nvme) qemu_disks+=(-device "nvme,serial=$serial,drive=d$i") ;;
	hdd | ssd | trimkeep)
		if [ -z "$scsi" ]; then
			qemu_disks+=(-device virtio-scsi-pci,id=scsi0)
			scsi=1
		fi
		rate=7200
		[ "$kind" != hdd ] && rate=1
		qemu_disks+=(-device "scsi-hd,bus=scsi0.0,drive=d$i,serial=$serial,rotation_rate=$rate")
		;;
	vdisk) qemu_disks+=(-device "virtio-blk-pci,drive=d$i,serial=$serial") ;;
	esac
done

# mitigations=off (the fast flavour only): the guest's kernel is a test
# harness under emulation, not a host to protect, and under TCG its Spectre
# mitigations (retpolines on every indirect call, RSB filling on each
# switch) cost more than anything else in a process start, close to half
# of a fork+exec (docs/testing.md has the figures; -cpu max and
# init_on_alloc=0 gained nothing more). The systemd
# flavour keeps them: with mitigations=off e2e/underfire failed twice in a
# row (keel.service's MainPID read at the end differed from the one read
# after its start while its journal showed one process, and once a systemd
# watchdog timeout), and passed with them; the cause is not found yet.
append='console=ttyS0 panic=-1 loglevel=4'
[ "$flavour" = systemd ] || append+=' mitigations=off'
root_disk=()
if [ "$flavour" = systemd ]; then
	if [ ! -e "$disk_dir/root.img" ]; then
		cp --sparse=always "$image/root.img" "$disk_dir/root.img"
	fi
	# First on the PCI bus, so the kernel names it vda.
	root_disk=(-drive "if=none,id=root,file=$disk_dir/root.img,format=raw,cache=unsafe,discard=unmap,aio=threads"
		-device virtio-blk-pci,drive=root,serial=keelroot)
	append+=' keel.root=/dev/vda'
fi
[ -z "$shell" ] || append+=' keel.shell=1'

qemu_base=(qemu-system-x86_64 -nodefaults -no-user-config -machine q35 -m "$mem" -smp "$smp"
	-display none -monitor none -no-reboot
	-kernel "$image/vmlinuz" -initrd "$image/initrd.img"
	-device virtio-rng-pci)

# KVM only where it boots the stock kernel: a short probe, cached per kernel
# image. On hosts whose /dev/kvm cannot run it (e.g. kvm_pvm) the guest hangs
# in an emulation failure, so the probe has a hard timeout.
kvm_works() {
	[ -w /dev/kvm ] || return 1
	local key probe
	key=$(cksum <"$image/vmlinuz" | cut -d' ' -f1)
	probe=$cache/kvm-probe-$key
	if [ ! -f "$probe" ]; then
		local pdir
		pdir=$(mktemp -d "${TMPDIR:-/tmp}/keel-kvm-probe.XXXXXX")
		mkdir -p "$pdir/share"
		echo 'echo kvm-probe-ok' >"$pdir/share/run.sh"
		flock -w "$lock_wait" "$lock" timeout -k 5 30 "${qemu_base[@]}" -accel kvm -cpu host \
			-append 'console=ttyS0 panic=-1 loglevel=4' -serial "file:$pdir/console.log" \
			-virtfs "local,path=$pdir/share,mount_tag=host,security_model=none,id=host" \
			</dev/null >/dev/null 2>&1 || true
		if [ "$(cat "$pdir/share/exitcode" 2>/dev/null)" = 0 ]; then echo ok >"$probe"; else echo fail >"$probe"; fi
		rm -rf "$pdir"
	fi
	[ "$(cat "$probe")" = ok ]
}
wait_turn
case $accel in
kvm) accel_args=(-accel kvm -cpu host) ;;
tcg) accel_args=(-accel tcg,thread=multi) ;;
auto)
	if kvm_works; then accel_args=(-accel kvm -cpu host); else accel_args=(-accel tcg,thread=multi); fi
	;;
esac

qemu=("${qemu_base[@]}" "${accel_args[@]}" -append "$append"
	-virtfs "local,path=$share,mount_tag=host,security_model=none,id=host"
	${root_disk[@]+"${root_disk[@]}"} ${qemu_disks[@]+"${qemu_disks[@]}"})

if [ -n "$shell" ]; then
	echo "vm-run.sh: guest shell ($flavour); share $share; disks in $disk_dir; exit the shell to power off" >&2
	flock -w "$lock_wait" "$lock" "${qemu[@]}" -chardev stdio,id=con,signal=off -serial chardev:con
	exit 0
fi

start=$(date +%s.%N)
set +e
if [ -n "$quiet" ]; then
	flock -w "$lock_wait" "$lock" timeout -k 5 "$timeout_s" "${qemu[@]}" -serial "file:$share/console.log" </dev/null >"$share/qemu.log" 2>&1
	qrc=$?
else
	flock -w "$lock_wait" "$lock" timeout -k 5 "$timeout_s" "${qemu[@]}" -serial stdio </dev/null 2>"$share/qemu.log" | tee "$share/console.log"
	qrc=${PIPESTATUS[0]}
fi
set -e
end=$(date +%s.%N)
wall=$(awk -v s="$start" -v e="$end" 'BEGIN{printf "%.1f", e-s}')

if [ "$qrc" -eq 124 ] || [ "$qrc" -eq 137 ]; then
	rc=124
	echo "vm-run.sh: guest timed out after ${timeout_s}s" >&2
elif [ -s "$share/exitcode" ]; then
	rc=$(cat "$share/exitcode")
elif [ "$qrc" -ne 0 ]; then
	rc=2
	echo "vm-run.sh: qemu failed (rc $qrc): $(tail -n 5 "$share/qemu.log")" >&2
else
	rc=125
	echo "vm-run.sh: the guest wrote no exit code (panic or crash)" >&2
fi
echo "vm-run.sh: rc=$rc wall=${wall}s accel=${accel_args[1]} flavour=$flavour" >&2
if [ "$rc" -ne 0 ]; then
	echo "vm-run.sh: console tail:" >&2
	tail -n 40 "$share/console.log" >&2 || true
fi
exit "$rc"
