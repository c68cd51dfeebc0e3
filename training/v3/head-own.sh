#!/usr/bin/env bash
# The default model's draft head trained on the model's own samples, with no dataset (issue "Draft
# trees that pay"): `adtree train drafter --model`, warm-started from the model's head, on the
# target's CFG samples (CFG 3, temperature 1: the model's sampling) of the training captions, the
# KL of the CFG-mixed distributions with a training-time test over two levels, measured on samples
# of 240 held-out captions. Checkpointed every 100 steps; run it again to resume. From the
# repository root:  training/v3/head-own.sh [OUT, default training/v3/runs/drafter-own]
# MODEL (default resources/models/emoji), STEPS (4000), SAMPLES (2048), NICE (10) change the run;
# INSTALL=1 puts the finished head into MODEL.
set -euo pipefail
R=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:-$R/training/v3/runs/drafter-own}
MODEL=${MODEL:-$R/resources/models/emoji}
RESUME=(); [[ -f $OUT/checkpoint.safetensors ]] && RESUME=(--resume)
INST=(); [[ ${INSTALL:-0} == 1 ]] && INST=(--install)
exec nice -n "${NICE:-10}" "$R/build/release/bin/adtree" train drafter --model "$MODEL" \
  --prompts "$R/training/v3/prompts-train.txt" \
  --validation-prompts "$R/training/v3/prompts-validation.txt" \
  --out "$OUT" --steps "${STEPS:-4000}" --batch 8 --lr 5e-4 --seed 0 --log-every 20 \
  --threads 2 --matmul bf16 \
  --config "{\"samples\":${SAMPLES:-2048},\"validation_samples\":240,\"eval_every\":500,\"eval_images\":64,\"checkpoint_every\":100}" \
  "${RESUME[@]}" "${INST[@]}"
