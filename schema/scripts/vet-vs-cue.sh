#!/usr/bin/env bash
# Times `keel vet` against `cue vet -c` (same schema, same files) as
# processes: N runs of each over every example, one process per file.
# Usage: schema/scripts/vet-vs-cue.sh [KEEL_BINARY] [N]
# Prints the total wall time of each tool and the ratio keel/cue.
set -euo pipefail
cd "$(dirname "$0")/../.."
keel=${1:-bin/keel}
n=${2:-20}
cue=$(command -v cue || echo "$(go env GOPATH)/bin/cue")
[ -x "$keel" ] || { echo "vet-vs-cue: $keel not built (make build)" >&2; exit 2; }
[ -x "$cue" ] || { echo "vet-vs-cue: cue CLI missing (go install cuelang.org/go/cmd/cue@v0.17.1)" >&2; exit 2; }
examples=(examples/*.cue)

# Both must agree that every example is valid before timing anything.
for f in "${examples[@]}"; do
	"$keel" vet "$f"
	"$cue" vet -c schema/keel.cue schema/root.cue "$f"
done

now() { date +%s%N; }
run_keel() { for f in "${examples[@]}"; do "$keel" vet "$f"; done; }
run_cue() { for f in "${examples[@]}"; do "$cue" vet -c schema/keel.cue schema/root.cue "$f"; done; }

# Interleave the two so that load from other processes hits both alike.
k=0 c=0
for _ in $(seq "$n"); do
	t0=$(now); run_keel; t1=$(now); run_cue; t2=$(now)
	k=$((k + t1 - t0)) c=$((c + t2 - t1))
done
runs=$((n * ${#examples[@]}))
awk -v k="$k" -v c="$c" -v runs="$runs" -v n="$n" -v files="${#examples[@]}" 'BEGIN {
	printf "files: %d examples, %d rounds, %d processes per tool\n", files, n, runs
	printf "keel vet:   %8.1f ms total, %6.2f ms per file\n", k / 1e6, k / 1e6 / runs
	printf "cue vet -c: %8.1f ms total, %6.2f ms per file\n", c / 1e6, c / 1e6 / runs
	printf "ratio keel/cue: %.2f\n", k / c
}'
