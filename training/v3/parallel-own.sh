#!/usr/bin/env bash
# The default model's parallel draft head (every tree level in one call; issue "Draft trees that
# pay", part 2), trained like head-own.sh on the model's own samples with no dataset: from random
# weights, six levels, the KL of the CFG-mixed distributions at every depth. It reuses the samples
# head-own.sh drew when they are there (the same request: model, prompts, CFG, temperature, seed).
# Checkpointed every 100 steps; run it again to resume. From the repository root:
#   training/v3/parallel-own.sh [OUT, default training/v3/runs/parallel-own]
# MODEL (default resources/models/emoji), STEPS (3000), NICE (10); INSTALL=1 installs the head.
set -euo pipefail
R=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:-$R/training/v3/runs/parallel-own}
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
  --out "$OUT" --steps "${STEPS:-3000}" --batch 8 --lr 1e-3 --seed 0 --log-every 20 \
  --threads 2 --matmul bf16 \
  --config '{"kind":"parallel","depths":6,"samples":2048,"validation_samples":240,"eval_every":250,"eval_images":64,"checkpoint_every":100}' \
  "${RESUME[@]}" "${INST[@]}"
