#!/bin/sh
# The continuous family's KL VAE (run from the run folder holding emoji64.safetensors; `adtree` on
# PATH or ADTREE set): 1,500 steps, batch 16, 4-d latents, 64x64 -> 16x16 tokens.
ADTREE=${ADTREE:-adtree}
"$ADTREE" train vae --data emoji64.safetensors --out runs/vae --steps 1500 --threads 2 \
  --log-every 50 --quiet "$@"
