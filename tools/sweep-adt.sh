#!/usr/bin/env bash
# The ablation sweeps behind docs/adt-tree.md, on the shipped model: the open questions about
# ADT-Tree (shape source, beta, l_d / l_k, budget N, EAGLE-2 at equal draft size, T = 0 vs 1,
# LANTERN). Sweep A runs as two shards side by side and is merged, like a cluster array would
# (docs/cluster.md). Usage: tools/sweep-adt.sh [OUT_DIR] (default docs/sweeps); SEEDS=2.
set -euo pipefail
cd "$(dirname "$0")/.."
B=build/release/bin/adtree
OUT=${1:-docs/sweeps}
SEEDS=${SEEDS:-2}
mkdir -p "$OUT"
common=(--seeds "$SEEDS")

# A: where the first shape comes from, at T = 0 and T = 1, with EAGLE-2 at ADT's draft size.
for i in 0 1; do
  $B sweep "${common[@]}" --method adt,dynamic,static --temperatures 0,1 \
    --adjacencies left,left+up,none,random,confidence --match-drafted \
    --shard "$i/2" --out "$OUT/a-shape-$i.jsonl" >"$OUT/a-shape-$i.log" 2>&1 &
done
wait
$B sweep merge --inputs "$OUT/a-shape-0.jsonl,$OUT/a-shape-1.jsonl" --out "$OUT/a-shape.jsonl" \
  --summary "$OUT/a-shape.md" >/dev/null
# B: beta. C: step-mode increments l_d, l_k. D: budget N. E: LANTERN delta (lossy).
$B sweep "${common[@]}" --method adt --temperatures 1 --betas 0.25,0.5,0.75,1 \
  --out "$OUT/b-beta.jsonl" --summary "$OUT/b-beta.md" >"$OUT/b-beta.log" 2>&1
$B sweep "${common[@]}" --method adt --temperatures 1 --updates step --l-d 1,2 --l-k 1,2,4 \
  --out "$OUT/c-steps.jsonl" --summary "$OUT/c-steps.md" >"$OUT/c-steps.log" 2>&1
$B sweep "${common[@]}" --method adt,dynamic --temperatures 1 --budgets 16,32,58,96 \
  --out "$OUT/d-budget.jsonl" --summary "$OUT/d-budget.md" >"$OUT/d-budget.log" 2>&1
$B sweep "${common[@]}" --method adt --temperatures 1 --lantern-deltas off,0.05,0.1,0.2 \
  --out "$OUT/e-lantern.jsonl" --summary "$OUT/e-lantern.md" >"$OUT/e-lantern.log" 2>&1
echo "sweeps written to $OUT"
