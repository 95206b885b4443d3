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
step() { printf '\n%s$ %s%s\n' "$bold" "$*" "$plain"; "$@"; printf '(exit %d)\n' "$?"; }

echo "keel demo: desired state in examples/*.cue, real hosts in examples/nodes/*.txtar"
for f in examples/*.cue; do
	step "$keel" vet "$f" || exit 1
done
step "$keel" status --node examples/nodes/vdo-thick.txtar
# A pool built with LVM's defaults, judged against the reference rules:
# ten threads, max_discard 1, a virtual size the pool cannot back.
step "$keel" check --audit --node examples/nodes/vdo-defaults.txtar
# The VDO article's lab, declared, against the host as captured.
step "$keel" check -c examples/proxmox-vdo-thick.cue --node examples/nodes/vdo-thick.txtar
step "$keel" plan -c examples/proxmox-vdo-thick.cue --node examples/nodes/vdo-thick.txtar
# The Harvester example against a thin host with the same names: what keel
# would change there (metadata to grow, the RAID-shaped pool to create).
step "$keel" plan -c examples/harvester-thin.cue --node examples/nodes/thin.txtar
# VDO on bcache, declared thick, against a capture that overcommits its pool.
step "$keel" check -c examples/vdo-on-bcache.cue --node examples/nodes/vdo-on-bcache.txtar
step "$keel" recommend --cpus 16 --size 40G
exit 0
