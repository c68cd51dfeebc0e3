#!/usr/bin/env bash
# The benches behind docs/PERFORMANCE.md, "ADT-Tree as the default": one run of every lossless
# method with the defaults, ADT in bf16, the cost rule planned with an H200-like curve, and the
# head's acceptance by depth against the previous head (N fixed, T = 1 and greedy, on held-out
# captions). From the repository root on an otherwise idle machine; OLD is a model directory with
# the previous head (training/v3/README.md, "The head trained for what is verified").
#   docs/bench/bench-adt-cost.sh [OLD]
set -euo pipefail
B=build/release/bin/adtree
M=${ADTREE_MODEL:-resources/models/emoji-v3}  # the default model of 2026-12-03
P="red apple noto;grinning face twemoji;rocket noto;dog face twemoji"
H="man beard noto;teacher twemoji;man pouting noto;man facepalming twemoji"
export ADTREE_THREADS=2
R=ar,adt:coupled,dynamic:coupled,static:coupled,sjd:coupled,pathspec:coupled,sjd-pac:coupled
$B bench --model $M --method $R --budget auto --prompts "$P" --seeds 2 --rounds 2 --reps 10 \
  --blocks 1,2,4,8,16,32 --cost-curve-out docs/bench/cost-curve-emoji.json \
  --json docs/bench/bench-adt-default.json > docs/bench/bench-adt-default.txt
$B bench --model $M --dtype bf16 --method ar,adt:coupled --prompts "$P" --seeds 2 --rounds 2 --reps 10 \
  --blocks 1,2,4,8,16,32 --json docs/bench/bench-adt-bf16.json > docs/bench/bench-adt-bf16.txt
$B bench --model $M --dtype bf16 --dtype-kl --prompts "$P" --seeds 2 > docs/bench/bench-bf16-kl.txt
$B bench --model $M --method ar,adt:coupled --cost-curve docs/sweeps/cost-curve-h200.json \
  --prompts "$P" --seeds 2 --reps 3 --blocks 1 --json docs/bench/bench-adt-h200-curve.json \
  > docs/bench/bench-adt-h200-curve.txt
for head in new ${1:+old}; do
  model=$M; [[ $head == old ]] && model=$1
  for t in 1 0; do
    $B bench --model "$model" --method ar,adt:coupled --adt-budget fixed --temperature $t \
      --prompts "$H" --seeds 2 --reps 3 --blocks 1 --json docs/bench/bench-head-$head-t$t.json \
      > docs/bench/bench-head-$head-t$t.txt
    $B bench --model "$model" --method ar,adt:coupled --adt-budget fixed --temperature $t \
      --prompts "$P" --seeds 2 --reps 3 --blocks 1 --json docs/bench/bench-head-$head-train-t$t.json \
      > docs/bench/bench-head-$head-train-t$t.txt
  done
done
# No tree pays on this curve: the cost rule takes AR-sized steps, so the ratio shows the loop's cost.
$B bench --model $M --method ar,adt:coupled --cost-curve docs/sweeps/cost-curve-steep.json \
  --prompts "$P" --seeds 2 --rounds 2 --reps 3 --blocks 1 > docs/bench/bench-adt-steep-curve.txt
# Longer free chains allowed: the planner's choice when the adjacency depth may reach 16.
$B bench --model $M --method ar,adt:coupled --adt-d-max 16 --prompts "$P" --seeds 2 --rounds 2 \
  --reps 3 --blocks 1 > docs/bench/bench-adt-dmax16.txt
# The worth of a guess left for the next step (--adt-leftover; 0 = plan one step only).
for v in 0 0.1 0.15 0.2 0.3; do
  echo "--adt-leftover $v"
  $B bench --model $M --method ar,adt:coupled --adt-leftover $v --prompts "$P" --seeds 2 \
    --rounds 2 --reps 3 --blocks 1 | grep -E '^ *(adt:coupled|method) '
done > docs/bench/bench-adt-leftover.txt
# The same in bf16: AR-sized steps against bf16 AR.
$B bench --model $M --dtype bf16 --method ar,adt:coupled --cost-curve docs/sweeps/cost-curve-steep.json \
  --prompts "$P" --seeds 2 --rounds 2 --reps 3 --blocks 1 > docs/bench/bench-adt-steep-curve-bf16.txt
# The defaults on the held-out captions (pictures the model was not trained on).
$B bench --model $M --method ar,adt:coupled,dynamic:coupled,sjd:coupled --prompts "$H" --seeds 2 \
  --rounds 2 --reps 3 --blocks 1 > docs/bench/bench-adt-heldout.txt
# One picture traced with the one-step planner (--adt-leftover 0) against AR: verification time by
# rows, and what steps with and without the head commit.
$B generate --prompt "red apple noto" --adt-leftover 0 --stats /tmp/adt-trace.json --out /tmp/adt.png --quiet
$B generate --prompt "red apple noto" --method ar --stats /tmp/ar-trace.json --out /tmp/ar.png --quiet
docs/bench/step-traces.py /tmp/adt-trace.json /tmp/ar-trace.json > docs/bench/bench-adt-step-traces.txt
