#!/usr/bin/env bash
# The default model's draft head trained for what is verified (issue "ADT-Tree as the default"):
# warm-started from the stage-3 head, every picture in both streams with the KL of the CFG-mixed
# distributions at CFG 3 and temperature 1 (what coupled verification samples), two unrolled
# passes on the head's own features (training-time test), half the rows the target's own samples.
# Checkpointed every 100 steps; run it again to resume. From the repository root:
#   training/v3/head-verified.sh [RUN_FOLDER, default out/v3]
# GPT (default runs/gpt3), FROM (the head it starts from, default runs/drafter-gpt3) and OUT
# (default runs/drafter-verified) name other stages; after-stage.sh runs it for a new GPT stage.
# The run folder needs emoji64.safetensors and runs/ as training/v3/README.md says (the GPT's
# folder with tokens.safetensors, copied from runs/gpt2 where missing: the same VQ codes).
set -euo pipefail
A=$(cd "$(dirname "$0")/../.." && pwd)/build/release/bin/adtree
cd "${1:-out/v3}"
GPT=${GPT:-runs/gpt3} FROM=${FROM:-runs/drafter-gpt3} OUT=${OUT:-runs/drafter-verified}
R=(); [[ -f $OUT/checkpoint.safetensors ]] && R=(--resume)
exec nice -n "${NICE:-5}" $A train drafter --data emoji64.safetensors --gpt "$GPT" --init-from "$FROM" \
  --out "$OUT" --steps ${HEAD_STEPS:-700} --batch 8 --lr 5e-4 --seed 0 --log-every 20 \
  --threads 2 --matmul bf16 \
  --config '{"self_samples":384,"self_eval_samples":64,"eval_every":400,"eval_images":64,"warmup":50,"checkpoint_every":100,"mix_weight":1.0,"tt_passes":2}' \
  "${R[@]}"
