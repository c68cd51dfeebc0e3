#!/usr/bin/env bash
# Stage 2 of the v3 GPT: 1,700 more steps from run 2's weights, token noise kept, lower peak lr.
exec nice -n 10 ../../build/release/bin/adtree train gpt --data emoji64.safetensors --vq runs/vq --init-from runs/gpt --out runs/gpt2 \
  --steps 1700 --batch 16 --lr 3e-4 --seed 1 --log-every 10 --threads 2 --matmul ${MATMUL:-bf16} \
  --config '{"dim":320,"n_layer":8,"n_head":5,"cap_dim":100,"multiple_of":64,"dropout":0.0,"warmup":50,"eval_every":1000,"checkpoint_every":50,"token_noise":0.5}' "$@"
