#!/usr/bin/env bash
# The measurements of docs/PERFORMANCE.md, "Heads trained on the model's own samples" (issue 54,
# parts 2 and 3): the draft heads' costs (an EAGLE level, the parallel head's one call) against a
# one-token step, and the tree methods drafted by each head against AR, in bf16 and fp32. The
# model is resources/models/emoji (MODEL=... for another with a parallel head). About 15 minutes
# on two cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
B=build/release/bin/adtree
OUT=${1:-docs/bench}
M=${MODEL:-resources/models/emoji}
P="cat face noto;santa claus noto;snowman noto;grinning face noto"
export ADTREE_THREADS=2
lscpu | grep -E "Model name|CPU family|Model:" > "$OUT/issue54-heads-cpu.txt"
for dt in bf16 fp32; do
  $B bench --model "$M" --dtype "$dt" \
    --method ar,adt:coupled,adt:coupled:parallel,dynamic:coupled,dynamic:coupled:parallel,sjd:coupled \
    --budget auto --prompts "$P" --seeds 2 --rounds 2 --reps 10 --blocks 1 \
    --json "$OUT/issue54-heads-$dt.json" > "$OUT/issue54-heads-$dt.txt"
done
