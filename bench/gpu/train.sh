#!/usr/bin/env bash
# The GPU training run of the next shipped model (docs/TRAINING.md, "On a GPU"), in one call and
# within 9 minutes: build, train the GPT on the carried codes dataset, self-distil and train its
# draft head, assemble the model directory in fp16 shards of at most 16 MiB (what a device run
# may return), and keep every log and metrics file. Each training stage first times 20 steps and
# then takes as many steps as fit its share of the time, so the schedule ends where it should.
# Inputs: tools/gpu-train-inputs.sh (third_party/train-inputs/) and tools/gpu-deps.sh.
# Usage: bench/gpu/train.sh OUTDIR                               on the GPU machine
#        DEVICE=cpu SIZE=tiny GPT_MIN=0.4 HEAD_MIN=0.3 bench/gpu/train.sh OUTDIR   CPU rehearsal
set -euo pipefail
OUT=${1:?usage: bench/gpu/train.sh OUTDIR}
DEVICE=${DEVICE:-cuda}
SIZE=${SIZE:-big}
GPT_MIN=${GPT_MIN:-4.5}
HEAD_MIN=${HEAD_MIN:-2}
JOBS=${JOBS:-$(nproc)}
BUILD=${BUILD:-build/gpu}
IN=${IN:-third_party/train-inputs}
cd "$(dirname "$0")/../.."
source bench/gpu/train-common.sh

step "configure and build ($JOBS jobs)"
DEVICE=$DEVICE JOBS=$JOBS BUILD=$BUILD bench/gpu/build.sh "$OUT"
B=$BUILD/bin/adtree

if [[ $SIZE == big ]]; then  # 21M parameters: dim 384, 12 layers, head_dim 64
  G='"dim":384,"n_layer":12,"n_head":6,"cap_dim":96,"multiple_of":64,"dropout":0.0'
  GPT_BATCH=64 HEAD_BATCH=32 SELF=2048
else  # the rehearsal's toy
  G='"dim":64,"n_layer":2,"n_head":1,"cap_dim":32,"multiple_of":32,"dropout":0.0'
  GPT_BATCH=8 HEAD_BATCH=4 SELF=16
fi
common=(--data "$IN/codes.safetensors" --device "$DEVICE" --seed 0 --log-every 10)

# Steps that fit MINUTES, from the tok/s of a 20-step probe (tokens per step: batch x 256).
fit_steps() {  # LOG BATCH MINUTES
  local tps
  tps=$(grep -o '[0-9.]* tok/s' "$1" | tail -1 | cut -d' ' -f1)
  python3 -c "import sys; t=float(sys.argv[1]); b=int(sys.argv[2]); m=float(sys.argv[3]);
print(max(50, int(m * 60 * t / (b * 256))))" "$tps" "$2" "$3"
}

step "GPT: probe"
"$B" train gpt "${common[@]}" --vq "$IN/vq" --out "$OUT/probe-gpt" --steps 20 --batch $GPT_BATCH \
  --config "{$G,\"warmup\":5,\"eval_every\":1000}" >"$OUT/probe-gpt.log" 2>&1
S=$(fit_steps "$OUT/probe-gpt.log" $GPT_BATCH "$GPT_MIN")
step "GPT: $S steps"
"$B" train gpt "${common[@]}" --vq "$IN/vq" --out "$OUT/gpt" --steps "$S" --batch $GPT_BATCH \
  --lr 6e-4 --config "{$G,\"warmup\":$((S / 20 + 1)),\"eval_every\":$S,\"token_noise\":0.5}" \
  >"$OUT/gpt.log" 2>&1 || { tail -20 "$OUT/gpt.log"; exit 1; }

step "draft head: probe"
H='"self_samples":'$SELF',"self_eval_samples":'$((SELF / 8))',"eval_images":128'
"$B" train drafter "${common[@]}" --gpt "$OUT/gpt" --out "$OUT/probe-head" --steps 20 \
  --batch $HEAD_BATCH --config "{$H,\"warmup\":5,\"eval_every\":1000}" >"$OUT/probe-head.log" 2>&1
S=$(fit_steps "$OUT/probe-head.log" $HEAD_BATCH "$HEAD_MIN")
step "draft head: $S steps"
"$B" train drafter "${common[@]}" --gpt "$OUT/gpt" --out "$OUT/drafter" --steps "$S" \
  --batch $HEAD_BATCH --lr 1e-3 --config "{$H,\"warmup\":$((S / 20 + 1)),\"eval_every\":$S}" \
  >"$OUT/drafter.log" 2>&1 || { tail -20 "$OUT/drafter.log"; exit 1; }

step "assemble"
"$B" train assemble --vq "$IN/vq" --gpt "$OUT/gpt" --drafter "$OUT/drafter" \
  --data "$IN/codes.safetensors" --out "$OUT/model" --dtype fp16 >"$OUT/assemble.log" 2>&1 || {
  tail -20 "$OUT/assemble.log"
  exit 1
}
# What comes back: the model directory, logs and metrics; not the fp32 run weights and
# checkpoints (over the 16 MiB a returned file may have), nor the probes.
rm -rf "$OUT/probe-gpt" "$OUT/probe-head"
find "$OUT/gpt" "$OUT/drafter" -name '*.safetensors' -delete
find "$OUT" -type f -size +16M -print | sed 's/^/train.sh: too large to return: /'
du -sh "$OUT/model" | tee -a "$OUT/run.log"
du -sh "$OUT" | tee -a "$OUT/run.log"
echo "total $((SECONDS - t0)) s" | tee -a "$OUT/run.log"
