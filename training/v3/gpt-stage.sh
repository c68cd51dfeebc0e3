#!/usr/bin/env bash
# One further stage of the v3 GPT from a finished stage's weights: token noise 0.5 and the stage-2
# peak lr 3e-4 on a fresh cosine schedule, bf16 products, two threads. From the run folder out/v3.
# Usage: gpt-stage.sh FROM TO STEPS SEED [more adtree train gpt options, e.g. --resume]
set -euo pipefail
FROM=$1 TO=$2 STEPS=$3 SEED=$4
shift 4
# A stage reads its VQ codes from the folder it starts from; every stage has the same codes.
[[ -f runs/$FROM/tokens.safetensors ]] || cp runs/gpt2/tokens.safetensors "runs/$FROM/"
exec nice -n "${NICE:-10}" ../../build/release/bin/adtree train gpt --data emoji64.safetensors --vq runs/vq \
  --init-from "runs/$FROM" --out "runs/$TO" --steps "$STEPS" --batch 16 --lr 3e-4 --seed "$SEED" \
  --log-every 10 --threads 2 --matmul "${MATMUL:-bf16}" \
  --config '{"dim":320,"n_layer":8,"n_head":5,"cap_dim":100,"multiple_of":64,"dropout":0.0,"warmup":50,"eval_every":1000,"checkpoint_every":100,"token_noise":0.5}' "$@"
