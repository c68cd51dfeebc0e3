#!/usr/bin/env bash
# The default model's draft heads trained on the model's own samples, with no dataset (issue "Draft
# trees that pay"): `adtree train drafter --model` on the target's CFG samples (CFG 3, temperature
# 1: the model's sampling) of the training captions, measured on samples of 240 held-out captions.
# HEAD chooses the head (training/v3/README.md, "Heads on the model's own samples"):
#   eagle     (default) the EAGLE head, warm-started from the model's, each CFG stream; 4,000 steps
#   mixed     the same head on the conditional stream alone, predicting the mix; 2,000 steps
#   parallel  the parallel head, six levels a call, from random weights, lr 1e-3; 3,000 steps
# The first run draws 2,048 samples; the others reuse them (the same request). Checkpointed every
# 100 steps; run it again to resume. From the repository root:
#   [HEAD=...] training/v3/head-own.sh [OUT, default training/v3/runs/<the HEAD's run folder>]
# MODEL (default resources/models/emoji), STEPS, NICE (10) change the run; INSTALL=1 puts the
# finished head into MODEL.
set -euo pipefail
R=$(cd "$(dirname "$0")/../.." && pwd)
case ${HEAD:=eagle} in
  eagle) RUN=drafter-own LR=5e-4 N=4000 C='"eval_every":500' ;;
  mixed) RUN=drafter-mixed LR=5e-4 N=2000 C='"output":"mixed","eval_every":250' ;;
  parallel) RUN=parallel-own LR=1e-3 N=3000 C='"kind":"parallel","depths":6,"eval_every":250' ;;
  *) echo "HEAD must be eagle, mixed or parallel" >&2; exit 1 ;;
esac
OUT=${1:-$R/training/v3/runs/$RUN}
MODEL=${MODEL:-$R/resources/models/emoji}
mkdir -p "$OUT"
for f in samples.safetensors validation-samples.safetensors; do
  S=$R/training/v3/runs/drafter-own/$f
  [[ -f $OUT/$f || ! -f $S || $S -ef $OUT/$f ]] || cp "$S" "$OUT/"
done
RESUME=(); [[ -f $OUT/checkpoint.safetensors ]] && RESUME=(--resume)
INST=(); [[ ${INSTALL:-0} == 1 ]] && INST=(--install)
exec nice -n "${NICE:-10}" "$R/build/release/bin/adtree" train drafter --model "$MODEL" \
  --prompts "$R/training/v3/prompts-train.txt" \
  --validation-prompts "$R/training/v3/prompts-validation.txt" \
  --out "$OUT" --steps "${STEPS:-$N}" --batch 8 --lr "$LR" --seed 0 --log-every 20 \
  --threads 2 --matmul bf16 \
  --config "{$C,\"samples\":2048,\"validation_samples\":240,\"eval_images\":64,\"checkpoint_every\":100}" \
  "${RESUME[@]}" "${INST[@]}"
