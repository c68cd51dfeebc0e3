#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to a generated image: set up, build, generate.
# Until the shipped model lands, a randomly initialised tiny model is made (it draws noise).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/build.sh
ADTREE=build/release/app/adtree/adtree
MODEL="${ADTREE_MODEL:-}"
if [[ -z "$MODEL" ]]; then
  if [[ -f resources/models/emoji/model.json ]]; then
    MODEL=resources/models/emoji
  else
    MODEL=build/release/models/random-tiny
    [[ -f "$MODEL/model.json" ]] || "$ADTREE" model random --config tiny --out "$MODEL" --name random-tiny
  fi
fi
mkdir -p out
"$ADTREE" generate --model "$MODEL" --prompt "${1:-a red heart}" --seed "${2:-0}" \
  --out out/adtree.png --stats out/adtree-stats.json --scale 4
echo "image: $(pwd)/out/adtree.png   statistics: $(pwd)/out/adtree-stats.json"
