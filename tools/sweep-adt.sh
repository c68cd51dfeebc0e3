#!/usr/bin/env bash
# The ablation sweeps behind docs/adt-tree.md, on the model they were measured on,
# resources/models/emoji-v2 (the default model until 2026-12-02; ADTREE_MODEL picks another): the
# open questions about ADT-Tree (shape source, beta, l_d / l_k, budget N and the shape-following
# budget, EAGLE-2 at equal draft size, T = 0 vs 1, the verification rule at T = 1,
# LANTERN, CASCADE). At T = 1 every lossless tree row uses the default rule (shared-noise coupling) unless
# the sweep names another. Sweep A runs as two shards side by side and is merged, like a cluster
# array would (docs/cluster.md). Usage: tools/sweep-adt.sh [OUT_DIR] (default docs/sweeps);
# SEEDS=2; ONLY_GREEDY=1 runs just the T = 0 sweeps F-H; ONLY_A=1 just sweep A; ONLY_RELAX=1 just
# the relaxed-acceptance sweeps K-L; ONLY_PJD=1 just the PJD sweeps M-O.
set -euo pipefail
cd "$(dirname "$0")/.."
B=build/release/bin/adtree
export ADTREE_MODEL=${ADTREE_MODEL:-resources/models/emoji-v2}
OUT=${1:-docs/sweeps}
SEEDS=${SEEDS:-2}
mkdir -p "$OUT"

sweep() {  # NAME ARGS...: one sweep into $OUT/NAME.{jsonl,md,log}
  local name=$1
  shift
  # The budget rule these sweeps measured (N fixed, the GPU's setting); a sweep's own
  # --adt-budgets axis overrides it.
  $B sweep --seeds "$SEEDS" --adt-budget fixed "$@" --out "$OUT/$name.jsonl" --summary "$OUT/$name.md" \
    >"$OUT/$name.log" 2>&1
}
# beta, step-mode increments l_d / l_k, and the budget N at one temperature.
knobs() {  # T BETA_NAME STEPS_NAME BUDGET_NAME
  sweep "$2" --method adt --temperatures "$1" --betas 0.25,0.5,0.75,1
  sweep "$3" --method adt --temperatures "$1" --updates step --l-d 1,2 --l-k 1,2,4
  sweep "$4" --method adt,dynamic --temperatures "$1" --budgets 16,32,58,96
}
# F, G, H: at T = 0 (greedy), where drafts are most often right.
greedy() { knobs 0 f-beta-greedy g-steps-greedy h-budget-greedy; }
if [[ "${ONLY_GREEDY:-0}" == 1 ]]; then greedy; echo "greedy sweeps written to $OUT"; exit 0; fi
# K: lossless, LANTERN and CASCADE on every tree under the one rule all three can use (q-sampled
# children), at T = 1 and T = 0. L: CASCADE's two thresholds (> 1 switches a signal off).
relax() {
  sweep k-relax --method static,dynamic,adt --verify sampled --temperatures 1,0 \
    --relaxes lossless,lantern,cascade
  sweep l-cascade --method adt --verify sampled --temperatures 1 --relaxes cascade \
    --cascade-tau-ss 0.5,0.9,2 --cascade-tau-cs 0.625,0.9,2
}
if [[ "${ONLY_RELAX:-0}" == 1 ]]; then relax; echo "relaxation sweeps written to $OUT"; exit 0; fi
# M: PJD against SJD, one row (lossless) and several, both masks, both rules, T = 1 and 0.
# N: PJD's row offset and window at T = 1 (coupled, row-causal). O: spatial against random
# first guesses (the paper's).
pjd() {
  sweep m-pjd --method pjd,sjd --temperatures 1,0 --verifies coupled,sampled \
    --pjd-row-counts 1,2,0 --pjd-masks row-causal,causal
  sweep n-pjd-shape --method pjd --temperatures 1 --pjd-offsets 2,4,8,12 --pjd-windows 4,8,12
  sweep o-pjd-init --method pjd --temperatures 1,0 --verifies coupled,sampled --pjd-offsets 2,8 \
    --pjd-inits spatial,random
}
if [[ "${ONLY_PJD:-0}" == 1 ]]; then pjd; echo "PJD sweeps written to $OUT"; exit 0; fi

# A: where the first shape comes from, at T = 0 and T = 1, with EAGLE-2 at ADT's draft size.
for i in 0 1; do
  $B sweep --seeds "$SEEDS" --method adt,dynamic,static --temperatures 0,1 \
    --adjacencies left,left+up,none,random,confidence --match-drafted \
    --shard "$i/2" --out "$OUT/a-shape-$i.jsonl" >"$OUT/a-shape-$i.log" 2>&1 &
done
wait
$B sweep merge --inputs "$OUT/a-shape-0.jsonl,$OUT/a-shape-1.jsonl" --out "$OUT/a-shape.jsonl" \
  --summary "$OUT/a-shape.md" >/dev/null
if [[ "${ONLY_A:-0}" == 1 ]]; then echo "sweep A written to $OUT"; exit 0; fi
# B, C, D: the same knobs at T = 1. E: LANTERN delta (lossy).
knobs 1 b-beta c-steps d-budget
sweep e-lantern --method adt --temperatures 1 --relaxes lossless,lantern --lantern-deltas 0.05,0.1,0.2
# I: the verification rule at T = 1 for every tree. J: the budget that follows the shape.
sweep i-verify --method adt,dynamic,static --temperatures 1 --verifies coupled,sampled,deterministic
sweep j-adt-budget --method adt --temperatures 0,1 --adt-budgets fixed,shape
relax
pjd
greedy
echo "sweeps written to $OUT"
