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
if [ -z "${E2E_PKGS:-}" ]; then
	E2E_PKGS=$(go list -tags e2e ./e2e/... | tr '\n' ' ')
fi
rc=0
go test -tags e2e -count=1 -p 1 -v -timeout "${E2E_TIMEOUT:-40m}" "$@" $E2E_PKGS || rc=$?
end=$(date +%s)
echo "run-e2e.sh: guest ready in $((built - start))s, whole suite $((end - start))s, rc=$rc" >&2
exit "$rc"
