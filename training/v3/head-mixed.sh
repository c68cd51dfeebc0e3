#!/usr/bin/env bash
# The default model's EAGLE head of the guided distribution (drafter.output "mixed"; issue "Draft
# trees that pay"): head-own.sh's recipe with the head on the conditional stream alone, predicting
# the CFG-mixed distribution itself (the KL at CFG 3 and temperature 1 over two unrolled levels),
# warm-started from the model's head. It reuses the samples head-own.sh drew. Checkpointed every
# 100 steps; run it again to resume. From the repository root:
#   training/v3/head-mixed.sh [OUT, default training/v3/runs/drafter-mixed]
# MODEL (default resources/models/emoji), STEPS (2000), NICE (10); INSTALL=1 installs the head.
set -euo pipefail
R=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:-$R/training/v3/runs/drafter-mixed}
MODEL=${MODEL:-$R/resources/models/emoji}
mkdir -p "$OUT"
for f in samples.safetensors validation-samples.safetensors; do
  [[ -f $OUT/$f || ! -f $R/training/v3/runs/drafter-own/$f ]] || cp "$R/training/v3/runs/drafter-own/$f" "$OUT/"
done
RESUME=(); [[ -f $OUT/checkpoint.safetensors ]] && RESUME=(--resume)
INST=(); [[ ${INSTALL:-0} == 1 ]] && INST=(--install)
exec nice -n "${NICE:-10}" "$R/build/release/bin/adtree" train drafter --model "$MODEL" \
  --prompts "$R/training/v3/prompts-train.txt" \
  --validation-prompts "$R/training/v3/prompts-validation.txt" \
  --out "$OUT" --steps "${STEPS:-2000}" --batch 8 --lr 5e-4 --seed 0 --log-every 20 \
  --threads 2 --matmul bf16 \
  --config '{"output":"mixed","samples":2048,"validation_samples":240,"eval_every":250,"eval_images":64,"checkpoint_every":100}' \
  "${RESUME[@]}" "${INST[@]}"
