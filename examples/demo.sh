#!/usr/bin/env bash
# The README's demo: keel doing its main job on bundled real data. Every node
# snapshot under examples/nodes/ was recorded by `keel snapshot` in the qemu
# test guest (Debian trixie kernel, lvm2 2.03.31, vdo 8.3.1.1).
set -u
keel=${1:-bin/keel}
cd "$(dirname "$0")/.."

# Bold command lines on a terminal only: no escape codes in a pipe or a log.
bold='' plain=''
if [ -t 1 ]; then bold=$'\033[1m' plain=$'\033[0m'; fi
# step WANT COMMAND...: run COMMAND, show its exit status, and count it as a
# failure unless it is WANT (keel's exit statuses, docs/cli.md: a check that
# finds what the demo shows exits 1, a command that could not run exits 2).
failed=0
step() {
	local want=$1 code
	shift
	printf '\n%s$ %s%s\n' "$bold" "$*" "$plain"
	"$@"
	code=$?
	printf '(exit %d)\n' "$code"
	if [ "$code" -ne "$want" ]; then
		printf 'demo: %s exited %d, want %d\n' "${*/#$keel/keel}" "$code" "$want" >&2
		failed=$((failed + 1))
	fi
}

echo "keel demo: desired state in examples/*.cue, real hosts in examples/nodes/*.txtar"
for f in examples/*.cue; do
	step 0 "$keel" vet "$f"
done
step 0 "$keel" status --node examples/nodes/vdo-thick.txtar
# A pool built with LVM's defaults, judged against the reference rules:
# ten threads, max_discard 1, a virtual size the pool cannot back.
step 1 "$keel" check --audit --node examples/nodes/vdo-defaults.txtar
# The VDO article's lab, declared, against the host as captured.
step 1 "$keel" check -c examples/proxmox-vdo-thick.cue --node examples/nodes/vdo-thick.txtar
step 0 "$keel" plan -c examples/proxmox-vdo-thick.cue --node examples/nodes/vdo-thick.txtar
# The Harvester example against a thin host with the same names: what keel
# would change there (metadata to grow, the RAID-shaped pool to create).
step 0 "$keel" plan -c examples/harvester-thin.cue --node examples/nodes/thin.txtar
# VDO on bcache, declared thick, against a capture that overcommits its pool.
step 1 "$keel" check -c examples/vdo-on-bcache.cue --node examples/nodes/vdo-on-bcache.txtar
step 0 "$keel" recommend --cpus 16 --size 40G
if [ "$failed" -gt 0 ]; then
	if [ "$failed" -eq 1 ]; then
		echo "demo: 1 step did not exit as expected" >&2
	else
		echo "demo: $failed steps did not exit as expected" >&2
	fi
	exit 1
fi
