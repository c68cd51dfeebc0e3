#!/usr/bin/env bash
# Brings back the weights of v3 run folders that the tree no longer holds (README.md, "What is here
# and where the weights are"): every *.safetensors of runs/RUN as of commit 0aa8d79, the last one
# that held them (then under docs/model/v3/runs/), written into training/v3/runs/RUN/, where
# .gitignore keeps them out of commits. Needs a clone with that commit (not a shallow one).
# Usage: training/v3/restore-weights.sh RUN...   e.g. gpt4 drafter-gpt3, or all
set -euo pipefail
C=0aa8d79
ALL=(gpt gpt2 gpt3 gpt4 gpt9 drafter drafter-gpt3 drafter-gpt9 drafter-verified)
(($#)) || { echo "usage: restore-weights.sh RUN... | all   (RUN: ${ALL[*]})" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
cd "$(git -C "$here" rev-parse --show-toplevel)"
runs=("$@")
[[ $1 == all ]] && runs=("${ALL[@]}")
for r in "${runs[@]}"; do
  mapfile -t paths < <(git ls-tree -r --name-only "$C" -- "docs/model/v3/runs/$r/" | grep '\.safetensors$')
  ((${#paths[@]})) || { echo "restore-weights: $C has no weights in docs/model/v3/runs/$r" >&2; exit 1; }
  for p in "${paths[@]}"; do
    f=training/v3/runs/$r/${p##*/}
    if [[ -f $f ]]; then echo "kept     $f"; continue; fi
    git cat-file blob "$C:$p" >"$f.partial" && mv "$f.partial" "$f"
    echo "restored $f"
  done
done
