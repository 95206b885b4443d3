#!/usr/bin/env bash
# Scenario script for e2e/vm-run.sh (systemd flavour, root on a disk): what
# starting a static binary from a cold page cache costs, as keel-activate
# pays it at boot before its main runs (docs/benchmark-history.md). Each
# binary given to vm-run.sh is copied to the root disk, then run as
# `BINARY version` five times with the caches dropped before each, each
# run followed by one warm.
#   e2e/vm-run.sh --flavour systemd --share DIR e2e/boot/coldstart.sh BINARY...
# The figures ("round N NAME cold|warm (real user sys) ...") are in
# DIR/guest.log.
set -uo pipefail
bins=()
for f in "$SHARE"/*; do
	[ -f "$f" ] && [ -x "$f" ] && [ "${f##*/}" != keel ] || continue
	case ${f##*/} in *.sh) continue ;; esac
	cp "$f" "/usr/local/bin/cold-${f##*/}" && bins+=("cold-${f##*/}")
done
[ ${#bins[@]} -gt 0 ] || { echo "FAIL: no binary in the share"; exit 1; }
sync
ls -l "${bins[@]/#//usr/local/bin/}"
TIMEFORMAT='%R %U %S'
for round in 1 2 3 4 5; do
	for b in "${bins[@]}"; do
		sync; echo 3 >/proc/sys/vm/drop_caches
		{ time "/usr/local/bin/$b" version >/dev/null 2>&1; } 2>/tmp/t
		echo "round $round $b cold (real user sys) $(cat /tmp/t)"
		{ time "/usr/local/bin/$b" version >/dev/null 2>&1; } 2>/tmp/t
		echo "round $round $b warm (real user sys) $(cat /tmp/t)"
	done
done
exit 0
