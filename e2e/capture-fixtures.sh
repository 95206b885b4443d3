#!/usr/bin/env bash
# Captures keel's real fixtures: boots the test guest once, builds each
# scenario's storage stack there, records it with `keel snapshot`, and
# copies the snapshots to probes/testdata/snapshots/<name>.txtar (all) and
# examples/nodes/<name>.txtar (the example nodes). The capture log, with
# vdolistmetadata and dm tables of each step, goes to
# probes/testdata/snapshots/capture.log.
#
# Usage: e2e/capture-fixtures.sh [SCENARIO...]     (default: all)
# Scenarios: empty vdo-thick vdo-defaults vdo-split (also vdo-split-grown,
# vdo-split-regrown) thin bcache (also bcache-defaults) vdo-on-bcache pve
# thin-inactive thin-vdodata vdo-nodedupe devices-file bcache-detached vg-incomplete (last:
# it deletes the HDD for the rest of the boot).
# Also scale-thin and scale-vdo (also scale-vdo-50; not in the default set: 2,000 LVs each,
# e2e/scenarios/scale.sh), written gzipped to probes/testdata/scale/, out of
# the snapshot set the other tests read.
# DRY_RUN=1 builds the stacks without snapshots (a stand-in keel is used).
# KEEL_BIN=FILE uses that static keel instead of building one (a stand-in that
# fails is how the no-copy path below is shown: docs/testing.md).
# CAPTURE_ROOT=DIR writes the results under DIR instead of the checkout.
set -euo pipefail
cd "$(dirname "$0")/.."

all="empty vdo-thick vdo-defaults vdo-split thin bcache vdo-on-bcache pve thin-inactive thin-vdodata vdo-nodedupe devices-file bcache-detached vg-incomplete"
examples=" vdo-thick vdo-defaults thin vdo-on-bcache "
# A host with a missing PV: the probe reports the PV's device as an error,
# which probes' replay test refuses; the planner tests read it from there.
# thin-vdodata is recorded with the narrowed report (TestNarrowReportSameHost
# reads only the captures made with lv_all), so it stays with the planner's.
reconcile_only=" vg-incomplete thin-vdodata "
scenarios=${*:-$all}
for s in $scenarios; do
	[[ " $all scale-thin scale-vdo " == *" $s "* ]] || { echo "capture-fixtures.sh: unknown scenario $s (known: $all)" >&2; exit 2; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/keel-capture.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/share"
echo "$scenarios" >"$work/share/scenarios.txt"
cp e2e/scenarios/stacks.sh "$work/share/stacks.sh"
cp e2e/scenarios/scale.sh "$work/share/scale.sh"
if [ "${DRY_RUN:-}" = 1 ]; then
	printf '#!/bin/sh\necho "dry run: keel $*"; [ "$1" = snapshot ] && [ "$2" = -o ] && echo dry > "$3"; exit 0\n' >"$work/keel"
	chmod +x "$work/keel"
elif [ -n "${KEEL_BIN:-}" ]; then
	cp "$KEEL_BIN" "$work/keel"
else
	CGO_ENABLED=0 go build -trimpath -o "$work/keel" ./cmd/keel
fi

rc=0
e2e/vm-run.sh --quiet --share "$work/share" --mem 3G --timeout 900 \
	--nvme 64G:nvme0 --hdd 128G:hdd1 --ssd 16G:ssd2 --keel "$work/keel" \
	e2e/scenarios/capture.sh || rc=$?

cat "$work/share/guest.log" 2>/dev/null || true
if [ "${DRY_RUN:-}" = 1 ]; then
	echo "capture-fixtures.sh: dry run finished with rc=$rc" >&2
	exit "$rc"
fi
if [ "$rc" != 0 ]; then
	# A failed scenario leaves partial or stale snapshots: copy none of them.
	echo "capture-fixtures.sh: the capture failed (rc=$rc); no fixture copied" >&2
	exit "$rc"
fi
dest=${CAPTURE_ROOT:-.}
mkdir -p "$dest/probes/testdata/snapshots" "$dest/examples/nodes"
# A capture of the scale scenarios alone keeps its log beside them.
log=$dest/probes/testdata/snapshots/capture.log
only_scale=1
for s in $scenarios; do [[ $s == scale-* ]] || only_scale=0; done
if [ $only_scale = 1 ]; then
	mkdir -p "$dest/probes/testdata/scale"
	log=$dest/probes/testdata/scale/capture.log
fi
cp "$work/share/guest.log" "$log" 2>/dev/null || true
n=0
for f in "$work"/share/out/*.txtar; do
	[ -e "$f" ] || continue
	name=$(basename "$f" .txtar)
	if [[ $name == scale-* ]]; then
		mkdir -p "$dest/probes/testdata/scale"
		gzip -9 -n <"$f" >"$dest/probes/testdata/scale/$name.txtar.gz"
	elif [[ $reconcile_only == *" $name "* ]]; then
		mkdir -p "$dest/reconcile/plan/testdata/snapshots"
		cp "$f" "$dest/reconcile/plan/testdata/snapshots/$name.txtar"
	else
		cp "$f" "$dest/probes/testdata/snapshots/$name.txtar"
	fi
	[[ $examples == *" $name "* ]] && cp "$f" "$dest/examples/nodes/$name.txtar"
	n=$((n + 1))
done
echo "capture-fixtures.sh: $n snapshots written under $dest" >&2
