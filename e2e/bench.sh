#!/usr/bin/env bash
# bench.sh — `make bench`: every benchmark of keel, then docs/benchmarks.md is
# rewritten from what this run measured (e2e/bench/report). Exits 1 when a
# target is missed, 2 when a part could not run, after writing the report.
#
# Environment:
#   BENCH_QUICK=1            fewer repetitions, 30 s daemon window: a smoke run
#   BENCH_ONLY=part,...      only these parts: config scale micro check guest boot wipe
#                            (the report then goes to $BENCH_REPORT, not docs/)
#   BENCH_DAEMON_SECONDS=N   the daemon's idle window in the guest (default 600)
#   BENCH_GUEST_ROUNDS=N     rounds of the guest's check bench at each size
#                            (default 21: one round's check ratio spreads by
#                            ±10 %, so 11 rounds moved the median by more
#                            than the 5 % target allows; docs/benchmark-history.md)
#   BENCH_BOOTCOST_50=N, BENCH_BOOTCOST_2000=N  reboots of the boot-cost bench
#                            (part boot) at ~50 and 2,000 LVs (default 12 and 12:
#                            six boots a mode each, after a warm-up boot)
#   BENCH_REPORT=FILE        where to write the report (default docs/benchmarks.md)
#   BENCH_RAW=DIR            keep the raw outputs there (default: a temporary directory)
# The guest parts need root and the test guest (docs/testing.md); they queue
# for the machine-wide qemu lock like every other guest.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

quick=${BENCH_QUICK:-0}
parts=${BENCH_ONLY:-config,scale,micro,check,guest,boot,wipe}
if [ "$quick" = 1 ]; then
	count=2 scale_time=1x micro_time=200ms rounds=3 guest_rounds=2 react=2 boots=1
	bootcost50=2 bootcost2000=2
	wipe_mib=512 wipe_offload_mib=1024 wipe_runs=3 daemon=${BENCH_DAEMON_SECONDS:-30}
else
	count=5 scale_time=3x micro_time=1s rounds=20 guest_rounds=${BENCH_GUEST_ROUNDS:-21} react=5 boots=3
	bootcost50=${BENCH_BOOTCOST_50:-12} bootcost2000=${BENCH_BOOTCOST_2000:-12}
	wipe_mib=2048 wipe_offload_mib=8192 wipe_runs=15 daemon=${BENCH_DAEMON_SECONDS:-600}
fi
if [ -n "${BENCH_ONLY:-}" ]; then
	report=${BENCH_REPORT:-$(mktemp /tmp/keel-bench-report.XXXXXX.md)}
else
	report=${BENCH_REPORT:-docs/benchmarks.md}
fi
if [ -n "${BENCH_RAW:-}" ]; then
	raw=$BENCH_RAW
	mkdir -p "$raw"
else
	raw=$(mktemp -d /tmp/keel-bench.XXXXXX)
fi
has() { case ",$parts," in *",$1,"*) return 0 ;; esac; return 1; }
log() { printf '[bench %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
fail() {
	log "part $1 failed: $2"
	echo "$2" >"$raw/$1.failed"
}
now() { date +%s%N; }

# --- the run's machine and versions -------------------------------------
{
	echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "commit=$(git describe --always --dirty 2>/dev/null || echo unknown)"
	echo "kernel=$(uname -r)"
	echo "cpus=$(nproc)"
	echo "cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
	echo "mem=$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
	echo "go=$(go version | awk '{ print $3, $4 }')"
	echo "cue=$( (cue version 2>/dev/null || "$(go env GOPATH)/bin/cue" version 2>/dev/null) | awk 'NR == 1 { print $3 }')"
	echo "qemu=$(qemu-system-x86_64 --version 2>/dev/null | awk 'NR == 1 { print $4 }')"
	echo "utillinux=$(blkdiscard --version 2>/dev/null | awk '{ print $NF }')"
	echo "quick=$quick"
	echo "parts=$parts"
	echo "count=$count"
	echo "rounds=$rounds"
	echo "guest_rounds=$guest_rounds"
	echo "react_rounds=$react"
	echo "daemon_seconds=$daemon"
	echo "wipe=$wipe_mib MiB x $wipe_runs (offload path $wipe_offload_mib MiB)"
	echo "load_before=$(cut -d' ' -f1-3 /proc/loadavg)"
} >"$raw/meta.txt"
start=$(now)
log "raw outputs in $raw; parts: $parts; quick=$quick"

keel=$raw/keel
if ! CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.Version=$(git describe --always --dirty 2>/dev/null || echo dev)" -o "$keel" ./cmd/keel; then
	log "keel does not build"
	exit 2
fi

# --- the real kernel: keel check vs probe commands, the daemon ----------
guest_parts() {
	if has guest; then
		log "guest: one boot (two daemon windows of ${daemon}s); waits for the qemu lock"
		printf 'ROUNDS=%s\nDAEMON_SECONDS=%s\nREACT_ROUNDS=%s\n' "$guest_rounds" "$daemon" "$react" >"$raw/bench.env"
		rm -rf "$raw/share"
		mkdir -p "$raw/share"
		# Two daemon windows (at ~50 and at 2,000 LVs) and four blocks of rounds.
		e2e/vm-run.sh --mem 3G --timeout $((2 * daemon + 1500 + 600 * guest_rounds)) --keel "$keel" --share "$raw/share" --quiet \
			--nvme 20G --hdd 60G:hdd1 --ssd 8G:ssd2 --nvme 4G:nvme3 \
			e2e/bench/guest.sh e2e/scenarios/stacks.sh e2e/scenarios/scale.sh examples/vdo-on-bcache.cue e2e/apply/desired/bcache.cue \
			"$raw/bench.env" >"$raw/guest-vm.txt" 2>&1
		rc=$?
		cp "$raw/share/guest.log" "$raw/guest.txt" 2>/dev/null
		[ $rc = 0 ] || fail guest "vm-run exit $rc: $(tail -5 "$raw/guest.txt" 2>/dev/null)"
	fi

	# --- boot: a bare boot, and keel-activate start to READY ----------------
	if has boot; then
		log "boot: BenchmarkBootFast x$boots"
		KEEL_E2E_BIN=$keel go test -tags e2e -run '^$' -bench BootFast -benchtime 1x -count "$boots" -timeout 90m \
			./e2e/guest/ >"$raw/bootfast.txt" 2>&1 || fail boot "BenchmarkBootFast: $(tail -3 "$raw/bootfast.txt")"
		if [ -e e2e/boot/boot_test.go ]; then
			log "boot: e2e/boot TestRebootIsBoring (three systemd boots)"
			KEEL_E2E_BIN=$keel go test -tags e2e -count=1 -v -run TestRebootIsBoring -timeout 90m \
				./e2e/boot/ >"$raw/boot.txt" 2>&1 || fail boot "e2e/boot: $(grep -m3 -E 'FAIL|Error' "$raw/boot.txt")"
			# keel-activate against the bare vgchange per VG, modes
			# alternating over reboots of one guest (docs/boot.md).
			log "boot: e2e/boot TestBootCost ($bootcost50 boots at ~50 LVs, $bootcost2000 at 2,000)"
			KEEL_BENCH_BOOTCOST=1 KEEL_BOOTCOST_BOOTS_50=$bootcost50 KEEL_BOOTCOST_BOOTS_2000=$bootcost2000 \
				KEEL_E2E_BIN=$keel go test -tags e2e -count=1 -v -run TestBootCost -timeout 120m \
				./e2e/boot/ >"$raw/bootcost.txt" 2>&1 || fail boot "e2e/boot TestBootCost: $(grep -m3 -E 'FAIL|Error' "$raw/bootcost.txt")"
		fi
	fi
}

# The guest parts run first and alone: a TCG guest's two vCPUs are two host
# threads, and the host parts beside them would take half of the machine
# from the guest's concurrent work (keel check runs its probe commands and
# its load side by side, lvm fullreport alone does not) and skew the ratio.
# They wait for the machine-wide qemu lock behind other jobs' guests.
guest_parts

# --- configuration: keel vet against cue vet, interleaved ---------------
if has config; then
	log "config: keel vet vs cue vet, $rounds rounds"
	cue=$(command -v cue || echo "$(go env GOPATH)/bin/cue")
	examples=(examples/*.cue)
	ok=1
	for f in "${examples[@]}"; do
		"$keel" vet "$f" >/dev/null 2>&1 || { fail config "keel vet $f failed"; ok=0; }
		"$cue" vet -c schema/keel.cue schema/root.cue "$f" >/dev/null 2>&1 || { fail config "cue vet $f failed"; ok=0; }
	done
	if [ $ok = 1 ]; then
		echo "files ${#examples[@]}" >"$raw/vet.txt"
		for _ in $(seq "$rounds"); do
			t0=$(now)
			for f in "${examples[@]}"; do "$keel" vet "$f" >/dev/null; done
			t1=$(now)
			for f in "${examples[@]}"; do "$cue" vet -c schema/keel.cue schema/root.cue "$f" >/dev/null; done
			t2=$(now)
			echo "keel $((t1 - t0))"
			echo "cue $((t2 - t1))"
		done >>"$raw/vet.txt"
	fi
fi

# --- scale: probe-parse + plan over 1k/10k/50k LVs, and the captured 50/2,000 ---
if has scale; then
	log "scale: BenchmarkScale, BenchmarkScaleSnapshots, BenchmarkCheckScale -count $count -benchtime $scale_time"
	go test -run '^$' -bench '^Benchmark(Scale|ScaleSnapshots|CheckScale)$' -benchmem -count "$count" -benchtime "$scale_time" -timeout 60m \
		./reconcile/plan/ >"$raw/scale.txt" 2>&1 || fail scale "go test -bench Scale: $(tail -3 "$raw/scale.txt")"
fi

# --- the other Go benchmarks --------------------------------------------
if has micro; then
	log "micro: Go benchmarks -count $count -benchtime $micro_time"
	go test -run '^$' -bench . -benchmem -count "$count" -benchtime "$micro_time" -timeout 60m \
		./schema/ ./lvm/vdo/ ./probes/ ./reconcile/activation/ ./reconcile/apply/lvmconf/ ./reconcile/apply/wipe/ \
		./cmd/keel/internal/uevent/ >"$raw/micro.txt" 2>&1 || fail micro "go test -bench: $(grep -m3 -E 'FAIL|cannot|error' "$raw/micro.txt")"
fi

# --- keel check --node on each bundled snapshot --------------------------
if has check; then
	log "check: keel check --node on examples/nodes, $rounds rounds"
	: >"$raw/checknode.txt"
	for snap in examples/nodes/*.txtar; do
		name=$(basename "$snap" .txtar)
		case $name in
		vdo-thick) args=(-c examples/proxmox-vdo-thick.cue) ;;
		vdo-on-bcache) args=(-c examples/vdo-on-bcache.cue) ;;
		*) args=(--audit) ;;
		esac
		for _ in $(seq "$rounds"); do
			t0=$(now)
			"$keel" check "${args[@]}" --node "$snap" >/dev/null 2>&1
			rc=$?
			t1=$(now)
			[ $rc -le 1 ] || { fail check "keel check ${args[*]} --node $snap: exit $rc"; break; }
			echo "$name $((t1 - t0)) $rc ${args[*]}"
		done >>"$raw/checknode.txt"
	done
fi

# --- removal: zero-out against blkdiscard --zeroout and dd --------------
# After the guest parts (a TCG guest takes a whole core of the two) and the
# host parts: the wipe runs compare wall times of processes. The offload path is given a
# larger device, so the ioctls' kernel work outweighs each tool's fixed cost
# (bench-wipe.sh measures that separately).
if has wipe; then
	if [ "$(id -u)" != 0 ]; then
		fail wipe "needs root (loop devices)"
	else
		log "wipe: ${wipe_offload_mib} MiB x $wipe_runs, offload path (backing file on $(stat -f -c %T "${TMPDIR:-/tmp}"))"
		e2e/bench-wipe.sh "$wipe_offload_mib" "$wipe_runs" >"$raw/wipe-offload.txt" 2>&1 || fail wipe "bench-wipe.sh: $(tail -3 "$raw/wipe-offload.txt")"
		log "wipe: ${wipe_mib} MiB x $wipe_runs, fallback path (backing file on tmpfs)"
		BENCH_DIR=/dev/shm e2e/bench-wipe.sh "$wipe_mib" "$wipe_runs" >"$raw/wipe-fallback.txt" 2>&1 || fail wipe "bench-wipe.sh (tmpfs): $(tail -3 "$raw/wipe-fallback.txt")"
	fi
fi

failed=$(cd "$raw" && ls *.failed 2>/dev/null | sed 's/\.failed$//' | tr '\n' ' ')
failed=${failed% }
{
	echo "load_after=$(cut -d' ' -f1-3 /proc/loadavg)"
	echo "wall_seconds=$((($(now) - start) / 1000000000))"
	echo "failed=$failed"
} >>"$raw/meta.txt"

log "writing $report"
go run ./e2e/bench/report -raw "$raw" -o "$report"
rc=$?
log "report: $report (raw outputs: $raw)"
if [ -n "$failed" ]; then
	log "parts that could not run: $failed"
	exit 2
fi
exit $rc
