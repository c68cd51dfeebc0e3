#!/usr/bin/env bash
# Further stages of the v3 GPT on a GPU (issue 38), one after another while the time allows: the
# recipe of training/v3/gpt-stage.sh (batch 16, peak lr 3e-4 on a fresh cosine schedule, warm-up
# 50, token noise 0.5, bf16 products, STEPS steps a stage, stage N seeded N), each stage starting
# from the previous one's fp16 run folder as the CPU stages start from the committed ones. Every
# finished stage becomes a run folder like training/v3/runs/gpt4 (the GPT in fp16 shards of at
# most 16 MiB, metrics.jsonl, run.json, text.json) under WORK, so that a second short call can
# return what the first could not (a device run returns at most 8 files, 64 MiB).
# Inputs: tools/gpu-deps.sh and tools/gpu-train-inputs.sh (third_party/, carried).
# Usage: bench/gpu/train-stages.sh OUTDIR FROM_RUN FIRST_STAGE DEADLINE_S
#   e.g. bench/gpu/train-stages.sh $OUT training/v3/runs/gpt4 5 470      on the GPU machine
#   (FROM_RUN needs its GPT shards: training/v3/restore-weights.sh gpt4 brings them from history)
#   DEVICE=cpu STEPS=20 JOBS=2 BUILD=build/release bench/gpu/train-stages.sh /tmp/r FROM 5 60
# A stage starts only when the previous stage's time still fits before DEADLINE_S (seconds from
# the start, build included). OUTDIR gets run.log, stages.tar.gz (every stage's small files and
# logs) and the shards of the last two stages (gptN-1.safetensors, gptN-2.safetensors); with
# STEPS=0 it only packages and returns the stages named in RETURN from an earlier call's WORK.
set -euo pipefail
OUT=${1:?usage: train-stages.sh OUTDIR FROM_RUN FIRST_STAGE DEADLINE_S}
FROM=$(cd "${2:?}" && pwd)
N=${3:?}
DEADLINE=${4:?}
DEVICE=${DEVICE:-cuda}
STEPS=${STEPS:-2400}
BUILD=${BUILD:-build/gpu}
IN=${IN:-third_party/train-inputs}
cd "$(dirname "$0")/../.."
ROOT=$PWD
WORK=${WORK:-$ROOT/$BUILD/stages}
mkdir -p "$WORK/runs"
source bench/gpu/train-common.sh
if [[ ! -x $BUILD/bin/adtree ]]; then
  step "configure and build"
  DEVICE=$DEVICE BUILD=$BUILD bench/gpu/build.sh "$OUT"
fi
B=$ROOT/$BUILD/bin/adtree
[[ $DEVICE == cpu ]] || nvidia-smi --query-gpu=name,memory.used --format=csv | tee -a "$OUT/run.log"

# A run folder to start from: the GPT's files plus the VQ codes every stage shares.
prev=$WORK/runs/from
rm -rf "$prev" && mkdir -p "$prev"
cp "$FROM"/gpt* "$FROM"/run.json "$FROM"/text.json "$prev/"
cp training/v3/runs/gpt2/tokens.safetensors "$prev/"
G='"dim":320,"n_layer":8,"n_head":5,"cap_dim":100,"multiple_of":64,"dropout":0.0'
last=0
while ((STEPS > 0)); do
  elapsed=$((SECONDS - t0))
  if ((last > 0 && elapsed + last * 11 / 10 > DEADLINE)); then
    step "stop before stage $N: a stage took $last s, $((DEADLINE - elapsed)) s are left"
    break
  fi
  s0=$SECONDS
  step "stage $N: $STEPS steps from $(basename "$prev")"
  run=$WORK/runs/fp32-gpt$N
  rm -rf "$run"
  "$B" train gpt --data "$IN/codes.safetensors" --vq "$IN/vq" --init-from "$prev" --out "$run" \
    --steps "$STEPS" --batch 16 --lr 3e-4 --seed "$N" --log-every 50 --device "$DEVICE" \
    --matmul bf16 --config "{$G,\"warmup\":50,\"eval_every\":480,\"checkpoint_every\":100000,\"token_noise\":0.5}" \
    >"$WORK/gpt$N.log" 2>&1 || { tail -30 "$WORK/gpt$N.log"; exit 1; }
  # The committed form: fp16 shards as assembled (what the next stage starts from, too).
  "$B" train assemble --vq "$IN/vq" --gpt "$run" --data "$IN/codes.safetensors" \
    --out "$WORK/model-gpt$N" --dtype fp16 >"$WORK/assemble$N.log" 2>&1 || {
    tail -20 "$WORK/assemble$N.log"
    exit 1
  }
  dir=$WORK/runs/gpt$N
  rm -rf "$dir" && mkdir -p "$dir"
  cp "$WORK/model-gpt$N"/gpt* "$dir/"
  cp "$run"/metrics.jsonl "$run"/run.json "$run"/text.json "$dir/"
  cp "$run/tokens.safetensors" "$dir/" 2>/dev/null || cp "$prev/tokens.safetensors" "$dir/"
  last=$((SECONDS - s0))
  grep '"final"' "$run/metrics.jsonl" | tail -1 | tee -a "$OUT/run.log" || true
  step "stage $N done in $last s"
  prev=$dir
  N=$((N + 1))
done

step "package"
(cd "$WORK" && tar czf "$OUT/stages.tar.gz" --exclude='*.safetensors' runs/gpt* ./*.log)
# The shards of the stages named in RETURN (default: the last two), two files each.
RETURN=${RETURN:-"$((N - 2)) $((N - 1))"}
for k in $RETURN; do
  d=$WORK/runs/gpt$k
  [[ -d $d ]] || continue
  cp "$d/gpt-00001-of-00002.safetensors" "$OUT/gpt$k-1.safetensors"
  cp "$d/gpt-00002-of-00002.safetensors" "$OUT/gpt$k-2.safetensors"
done
ls -la "$OUT" | tee -a "$OUT/run.log"
echo "total $((SECONDS - t0)) s" | tee -a "$OUT/run.log"
