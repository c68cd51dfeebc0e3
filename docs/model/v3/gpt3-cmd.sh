#!/usr/bin/env bash
# Stage 3 of the v3 GPT: one longer cosine schedule from stage 2's weights (token noise kept, the
# stage-2 peak lr), in place of several short restarts. From the run folder out/v3.
exec nice -n 10 ../../build/release/bin/adtree train gpt --data emoji64.safetensors --vq runs/vq --init-from runs/gpt2 --out runs/gpt3 \
  --steps ${STEPS:-3800} --batch 16 --lr 3e-4 --seed 2 --log-every 10 --threads 2 --matmul ${MATMUL:-bf16} \
  --config '{"dim":320,"n_layer":8,"n_head":5,"cap_dim":100,"multiple_of":64,"dropout":0.0,"warmup":50,"eval_every":1000,"checkpoint_every":100,"token_noise":0.5}' "$@"
