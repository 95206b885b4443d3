#!/usr/bin/env bash
# CI entry point of the real-kernel suite (make e2e): builds or reuses the
# cached test guest, builds the static keel binary once, and runs every e2e
# Go test, one package (hence one guest) at a time. See docs/testing.md.
#
# Usage: e2e/run-e2e.sh [go test flags...]   e.g. -run TestThinPool512K
# Environment: KEEL_E2E_CACHE (guest cache), MIRROR (Debian mirror),
# E2E_TIMEOUT (go test -timeout, default 40m), E2E_PKGS (default: every e2e
# package), KEEL_E2E_KEEP (where a failed test's guest files are kept,
# default failed/ in the guest cache; KEEL_E2E_KEEP= keeps none).
set -euo pipefail
cd "$(dirname "$0")/.."
# A failed scenario's $OUT (its journal, keel's command log, figures) stays
# on the machine that ran it: a rare failure in an unattended CI run is
# studied afterwards, not only from the test's last lines.
export KEEL_E2E_KEEP=${KEEL_E2E_KEEP-${KEEL_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/keel-e2e}/failed/$(date -u +%Y%m%dT%H%M%S)}

start=$(date +%s)
e2e/image/build.sh fast >/dev/null
if grep -rlq --include='*_test.go' 'guest.Systemd' e2e; then
	e2e/image/build.sh systemd >/dev/null
fi
built=$(date +%s)

bindir=$(mktemp -d "${TMPDIR:-/tmp}/keel-e2e-bin.XXXXXX")
trap 'rm -rf "$bindir"' EXIT
CGO_ENABLED=0 go build -trimpath -o "$bindir/keel" ./cmd/keel
export KEEL_E2E_BIN=$bindir/keel

# Every e2e package runs here, e2e/underfire included, within CI's hour
# (docs/testing.md has the suite's time). e2e/kill runs here 2 iterations
# (KEEL_KILL_ITERATIONS):
# 2 kinds one after another from a place in the rotation the random seed
# picks, so every kind comes round over several runs; make e2e-long runs
# its 50. More leaves too little of CI's hour once the RAID, multipath,
# lvmlockd and size scenarios run too (docs/testing.md).
export KEEL_KILL_ITERATIONS=${KEEL_KILL_ITERATIONS:-2}
# Two lanes of one-CPU guests, then the rest alone with two CPUs. Under TCG
# two guests of two vCPUs each on a 2-CPU machine starve each other (a
# kill loop iteration takes several times as long beside e2e/wipe), but
# two one-vCPU guests share it well: two packages side by side take about
# as long as the longer one alone with two vCPUs (docs/testing.md). Only
# packages without wall-clock bounds go in a lane: a scenario that asserts
# a reaction within N seconds, a watchdog, a daemon's resync or a cold
# boot's activation timeout runs alone afterwards (apply boot faults signal
# underfire watchdog), and so does any package not in a lane, so a new
# package is never raced by default. E2E_LANES=1 (or
# E2E_PKGS, or any go test argument) runs everything one after another.
lanes=("kill smoke probes guest ownership audit vdo" "wipe check remedies lvmfilter sizes health")
gotest=(go test -tags e2e -count=1 -p 1 -v -timeout "${E2E_TIMEOUT:-40m}")
rc=0
if [ -n "${E2E_PKGS:-}" ] || [ $# -gt 0 ] || [ "${E2E_LANES:-2}" = 1 ]; then
	if [ -z "${E2E_PKGS:-}" ]; then
		E2E_PKGS=$(go list -tags e2e ./e2e/... | tr '\n' ' ')
	fi
	"${gotest[@]}" "$@" $E2E_PKGS || rc=$?
else
	rest=()
	for p in $(go list -tags e2e ./e2e/...); do
		case " ${lanes[*]} " in *" ${p##*/e2e/} "*) ;; *) rest+=("$p") ;; esac
	done
	t0=$(date +%s)
	pids=()
	for n in 0 1; do
		# shellcheck disable=SC2086 # one word per package
		KEEL_GUEST_SMP=1 KEEL_QEMU_LOCK=$bindir/lane$n.lock \
			"${gotest[@]}" $(printf './e2e/%s ' ${lanes[n]}) >"$bindir/lane$n.log" 2>&1 &
		pids+=($!)
	done
	for n in 0 1; do
		wait "${pids[n]}" || rc=$?
		echo "=== lane $n: ${lanes[n]}"
		cat "$bindir/lane$n.log"
	done
	echo "run-e2e.sh: the two lanes took $(($(date +%s) - t0))s" >&2
	"${gotest[@]}" "${rest[@]}" || rc=$?
fi
end=$(date +%s)
echo "run-e2e.sh: guest ready in $((built - start))s, whole suite $((end - start))s, rc=$rc" >&2
exit "$rc"
