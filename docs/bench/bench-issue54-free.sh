#!/usr/bin/env bash
# The measurements of docs/PERFORMANCE.md, "Free candidates inside the head's tree" (issue 54,
# part 4): ADT-Tree with free candidates below the draft head's rank-0 path and the codes to the
# left (the default since 2026-12-06) against one chain below the root (`--adt-grid-tree off`, the
# rule before), drafted by either head, in bf16 and fp32 on this machine's cost curve, and in bf16
# planned with the H200 curve (its tau is what carries to a GPU; its wall times are a CPU running
# a GPU's plans). Every entry runs in one process, in turn per picture. About 15 minutes on two
# cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
B=build/release/bin/adtree
OUT=${1:-docs/bench}
M=${MODEL:-resources/models/emoji}
P="cat face noto;santa claus noto;snowman noto;grinning face noto"
E="ar,adt:coupled,adt:coupled@adt-grid-tree=off,adt:coupled:parallel"
E="$E,adt:coupled:parallel@adt-grid-tree=off"
export ADTREE_THREADS=2
lscpu | grep -E "Model name|CPU family|Model:" > "$OUT/issue54-free-cpu.txt"
for dt in bf16 fp32; do
  $B bench --model "$M" --dtype "$dt" --method "$E" --budget auto --prompts "$P" --seeds 2 \
    --rounds 2 --json "$OUT/issue54-free-$dt.json" > "$OUT/issue54-free-$dt.txt"
done
$B bench --model "$M" --dtype bf16 --cost-curve docs/sweeps/cost-curve-h200.json --method "$E" \
  --budget auto --prompts "$P" --seeds 2 --rounds 1 --json "$OUT/issue54-free-h200-curve.json" \
  > "$OUT/issue54-free-h200-curve.txt"
