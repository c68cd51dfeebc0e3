#!/bin/sh
# The continuous model's target: 256 x 6 transformer, 256 x 3 diffusion head, bf16 products, on the
# VAE's tokens. Resumable: run it again with --resume. THREADS: 2 unless set (1 beside another run).
ADTREE=${ADTREE:-adtree}
"$ADTREE" train continuous --data emoji64.safetensors --vae runs/vae --out runs/target \
  --steps 12000 --threads "${THREADS:-2}" --matmul bf16 --log-every 50 --eval-every 1000 --quiet \
  --config '{"eval_images": 64}' "$@"
