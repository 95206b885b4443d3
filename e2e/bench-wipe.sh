#!/bin/sh
# bench-wipe.sh — keel's zero-out engine against blkdiscard --zeroout and a
# 1 MiB write loop, on one loop device, interleaved, repeated.
#
# usage: e2e/bench-wipe.sh [SIZE_MIB] [RUNS] [STEP]   (defaults 2048 5 32M; needs root)
#        BENCH_DIR=/dev/shm e2e/bench-wipe.sh ...  puts the backing file there
#        FIXED_RUNS=N (default 15): rounds of the fixed-cost measurement
#
# On ext4 the loop device passes WRITE ZEROES to fallocate(ZERO_RANGE). Each
# ioctl then costs what the kernel spends dropping the backing file's cached
# pages of the range (the fill below leaves them cached; with them dropped a
# whole 2 GiB wipe takes about a millisecond), so the run measures that
# kernel work plus each tool's fixed cost: give it a size large enough that
# the ioctls dominate. On tmpfs (no ZERO_RANGE) the loop device drops WRITE
# ZEROES after the first attempt and the kernel writes zero pages: the
# bandwidth-bound fallback.
#
# Each measured run first fills the device with written blocks (dd, not
# timed), so every tool starts from the same state; the order of the three
# tools rotates from run to run. Times are whole processes started from this
# shell; for keel the time spent inside the engine (wipe.Wipe, as zerobench
# reports it) is recorded too, as keel-engine. Then the fixed cost of each
# tool (process start, its checks before the first ioctl, exit) is measured
# as FIXED_RUNS interleaved rounds of both tools clearing only the first MiB
# (--length 1M, one ioctl). Prints one row per run and a summary table with
# medians. Nothing outside a temporary directory and one loop device is
# touched; both are removed on exit.
set -eu

SIZE_MIB=${1:-2048}
RUNS=${2:-5}
STEP=${3:-32M}
FIXED_RUNS=${FIXED_RUNS:-15}

if [ "$(id -u)" -ne 0 ]; then
	echo "bench-wipe: needs root (loop devices)" >&2
	exit 2
fi
for t in losetup blkdiscard dd go awk; do
	command -v "$t" >/dev/null || { echo "bench-wipe: $t not found" >&2; exit 2; }
done

here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${BENCH_DIR:-${TMPDIR:-/tmp}}/bench-wipe.XXXXXX")
dev=""
cleanup() {
	[ -n "$dev" ] && losetup -d "$dev" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

(cd "$here" && go build -o "$tmp/zerobench" ./e2e/wipe/zerobench)
fallocate -l "${SIZE_MIB}M" "$tmp/disk.img"
dev=$(losetup -f --show "$tmp/disk.img")
q=/sys/class/block/$(basename "$dev")/queue
bytes=$((SIZE_MIB * 1048576))

now() { date +%s.%N; }

fill() {
	dd if=/dev/zero of="$dev" bs=1M count="$SIZE_MIB" oflag=direct conv=fsync status=none
	# a non-zero pattern in the first and last MiB, checked after each wipe
	printf 'keel-bench' | dd of="$dev" bs=1 seek=0 conv=notrunc,fsync status=none
	printf 'keel-bench' | dd of="$dev" bs=1 seek=$((bytes - 4096)) conv=notrunc,fsync status=none
}

check_zero() {
	if [ "$(dd if="$dev" bs=4096 count=1 iflag=direct status=none | tr -d '\0' | wc -c)" -ne 0 ] ||
		[ "$(dd if="$dev" bs=4096 skip=$((bytes / 4096 - 1)) count=1 iflag=direct status=none | tr -d '\0' | wc -c)" -ne 0 ]; then
		echo "bench-wipe: $1 left non-zero data on $dev" >&2
		exit 1
	fi
}

run_tool() {
	case $1 in
	keel) "$tmp/zerobench" -step "$STEP" ${2:+-length "$2"} "$dev" >"$tmp/zerobench.out" ;;
	blkdiscard) blkdiscard --zeroout --step "$STEP" ${2:+--length "$2"} "$dev" ;;
	dd-1M) dd if=/dev/zero of="$dev" bs=1M count="$SIZE_MIB" oflag=direct conv=fsync status=none ;;
	esac
}

echo "# bench-wipe: $(uname -r), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "# device $dev on a ${SIZE_MIB} MiB preallocated file ($(stat -f -c %T "$tmp")), step $STEP,"
echo "# write_zeroes_max_bytes $(cat "$q/write_zeroes_max_bytes") at start, $(blkdiscard --version),"
echo "# load average at start $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-4s %-11s %9s %10s\n' run tool seconds MiB/s
tools="keel blkdiscard dd-1M"
: >"$tmp/results"
r=1
while [ "$r" -le "$RUNS" ]; do
	for t in $tools; do
		fill
		t0=$(now)
		run_tool "$t"
		t1=$(now)
		check_zero "$t"
		secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }')
		rate=$(awk -v s="$secs" -v m="$SIZE_MIB" 'BEGIN { printf "%.0f", m / s }')
		printf '%-4s %-11s %9s %10s\n' "$r" "$t" "$secs" "$rate"
		echo "$t $secs" >>"$tmp/results"
		if [ "$t" = keel ]; then
			# zerobench prints "BYTES bytes SECONDS s step STEP"
			esecs=$(awk '{ printf "%.4f", $3 }' "$tmp/zerobench.out")
			erate=$(awk -v s="$esecs" -v m="$SIZE_MIB" 'BEGIN { printf "%.0f", m / s }')
			printf '%-4s %-11s %9s %10s\n' "$r" keel-engine "$esecs" "$erate"
			echo "keel-engine $esecs" >>"$tmp/results"
		fi
	done
	# rotate the order: a b c -> b c a
	set -- $tools
	first=$1
	shift
	tools="$* $first"
	r=$((r + 1))
done

# The fixed cost: both tools clear the first MiB only (one ioctl), so what
# is timed is process start, the checks before the first ioctl, and exit.
echo
echo "# fixed cost: --length 1M, $FIXED_RUNS rounds, order alternating"
f=1
while [ "$f" -le "$FIXED_RUNS" ]; do
	if [ $((f % 2)) -eq 1 ]; then order="keel blkdiscard"; else order="blkdiscard keel"; fi
	for t in $order; do
		t0=$(now)
		run_tool "$t" 1M
		t1=$(now)
		secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }')
		echo "fixed $f $t $secs"
		echo "fixed-$t $secs" >>"$tmp/results"
	done
	f=$((f + 1))
done

echo
echo "| tool | runs | median s | min s | max s | median MiB/s | vs blkdiscard |"
echo "|---|---:|---:|---:|---:|---:|---:|"
tools="keel keel-engine blkdiscard dd-1M fixed-keel fixed-blkdiscard"
for t in $tools; do
	awk -v t="$t" '$1 == t { print $2 }' "$tmp/results" | sort -n >"$tmp/$t.sorted"
done
median() { awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }' "$1"; }
bmed=$(median "$tmp/blkdiscard.sorted")
fbmed=$(median "$tmp/fixed-blkdiscard.sorted")
for t in $tools; do
	case $t in
	fixed-*) b=$fbmed m=1 ;;
	*) b=$bmed m=$SIZE_MIB ;;
	esac
	awk -v t="$t" -v m="$m" -v b="$b" '{ a[NR] = $1 } END {
		med = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
		printf "| %s | %d | %.4f | %.4f | %.4f | %.0f | %.2fx |\n", t, NR, med, a[1], a[NR], m / med, b / med
	}' "$tmp/$t.sorted"
done
echo
echo "write_zeroes_max_bytes at the end: $(cat "$q/write_zeroes_max_bytes")"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "(vs blkdiscard = blkdiscard's median time / the tool's median time; above 1 is faster;"
echo " keel-engine is the time inside wipe.Wipe of the keel runs, fixed-* rows compare with fixed-blkdiscard)"
