#!/bin/sh
# CSpD's draft model: 128 x 3 transformer, 128 x 2 head, the same tokens, words and schedule.
ADTREE=${ADTREE:-adtree}
"$ADTREE" train continuous --data emoji64.safetensors --vae runs/vae --out runs/draft \
  --steps 8000 --threads 1 --matmul bf16 --log-every 50 --eval-every 1000 --quiet \
  --config '{"dim": 128, "n_layer": 3, "n_head": 2, "head_width": 128, "head_blocks": 2,
             "eval_images": 64}' "$@"
