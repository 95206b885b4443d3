#!/usr/bin/env bash
# CI entry point of the real-kernel suite (make e2e): builds or reuses the
# cached test guest, builds the static keel binary once, and runs every e2e
# Go test, one package (hence one guest) at a time. See docs/testing.md.
#
# Usage: e2e/run-e2e.sh [go test flags...]   e.g. -run TestThinPool512K
# Environment: KEEL_E2E_CACHE (guest cache), MIRROR (Debian mirror),
# E2E_TIMEOUT (go test -timeout, default 40m), E2E_PKGS (default: every e2e
# package).
set -euo pipefail
cd "$(dirname "$0")/.."

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

# Every e2e package runs here, e2e/underfire included since 2026-12-02
# (keel-activate no longer waits 2 minutes for a VG keel is to create, and
# the faults and watchdog scenarios were made shorter: docs/testing.md has
# the suite's time). e2e/kill runs here one iteration per kind; make
# e2e-long runs its 50.
#
# Two lanes, then the rest alone. A guest under TCG keeps about 1 to 1.3 of
# this machine's 2 CPUs busy, so two guests at once finish two packages in
# about two thirds of the time they take one after the other (measured:
# e2e/vdo + e2e/lvmfilter 203 s in a row, 135 s side by side). Only packages
# without wall-clock bounds share the machine: a scenario that asserts a
# reaction within N seconds, a watchdog, a daemon's resync or a cold boot's
# activation timeout runs alone afterwards (apply boot faults signal
# underfire watchdog), and so does any package not in a lane, so a new
# package is never raced by default. E2E_LANES=1 (or
# E2E_PKGS, or any go test argument) runs everything one after another.
lanes=("kill check guest vdo" "wipe smoke probes remedies lvmfilter")
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
		KEEL_QEMU_LOCK=$bindir/lane$n.lock "${gotest[@]}" $(printf './e2e/%s ' ${lanes[n]}) >"$bindir/lane$n.log" 2>&1 &
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
