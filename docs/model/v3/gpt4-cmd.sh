#!/usr/bin/env bash
# Stage 4 of the v3 GPT: 1,400 more steps from stage 3 (token noise kept, the stage-2 peak lr),
# for prompt fidelity (more epochs). From the run folder out/v3.
exec nice -n 10 ../../build/release/bin/adtree train gpt --data emoji64.safetensors --vq runs/vq --init-from runs/gpt3 --out runs/gpt4 \
  --steps ${STEPS:-1400} --batch 16 --lr 3e-4 --seed 3 --log-every 10 --threads 2 --matmul ${MATMUL:-bf16} \
  --config '{"dim":320,"n_layer":8,"n_head":5,"cap_dim":100,"multiple_of":64,"dropout":0.0,"warmup":50,"eval_every":1000,"checkpoint_every":100,"token_noise":0.5}' "$@"
