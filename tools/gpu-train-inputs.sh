#!/usr/bin/env bash
# The inputs of the GPU training run (bench/gpu/train.sh), made on a CPU machine: the training set
# as VQ codes plus captions (the GPU machine takes at most 64 MiB of inputs; the pictures are 93 MB,
# their codes 3.9 MB) and the VQ run that made them, into third_party/train-inputs/ (ignored by
# git; name third_party in the device run's carry list).
# Usage: tools/gpu-train-inputs.sh DATASET VQ_RUN     e.g. emoji64.safetensors runs/vq
set -euo pipefail
DATA=${1:?usage: tools/gpu-train-inputs.sh DATASET VQ_RUN}
VQ=${2:?usage: tools/gpu-train-inputs.sh DATASET VQ_RUN}
ADTREE=${ADTREE:-build/release/bin/adtree}
root=$(cd "$(dirname "$0")/.." && pwd)
dest=$root/third_party/train-inputs
for f in vq.safetensors run.json; do
  [[ -f $VQ/$f ]] || { echo "gpu-train-inputs: $VQ is not a finished 'adtree train vq' run (no $f)" >&2; exit 1; }
done
mkdir -p "$dest/vq"
cp "$VQ/vq.safetensors" "$VQ/run.json" "$dest/vq/"
"$ADTREE" data codes --data "$DATA" --vq "$VQ" --out "$dest/codes.safetensors"
echo "gpu-train-inputs: $(du -sh "$dest" | cut -f1) in $dest"
