#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to the app: set up, build, start the GUI (or, without a
# display or with ADTREE_CLI=1, generate an image with the CLI).
# The shipped model (resources/models/emoji) is the default; $ADTREE_MODEL picks another. Without
# it (a partial checkout) a randomly initialised tiny model is made, which draws noise. The default
# prompt is one the shipped model draws on every seed tried (its card, "Example prompts").
set -euo pipefail
cd "$(dirname "$0")/.."
tools/build.sh
ADTREE=build/release/bin/adtree
MODEL="${ADTREE_MODEL:-}"
if [[ -z "$MODEL" ]]; then
  if [[ -f resources/models/emoji/model.json ]]; then
    MODEL=resources/models/emoji
  else
    MODEL=build/release/models/random-tiny
    [[ -f "$MODEL/model.json" ]] || "$ADTREE" model random --config tiny --out "$MODEL" --name random-tiny
  fi
fi
# With a display and the GUI built, start the desktop app on that model; else generate with the CLI.
STUDIO=build/release/bin/adtree-studio
if [[ -x "$STUDIO" && ( -n "${DISPLAY:-}" || -n "${WAYLAND_DISPLAY:-}" ) && "${ADTREE_CLI:-0}" != 1 ]]; then
  exec "$STUDIO" "$MODEL"
fi
mkdir -p out
"$ADTREE" generate --model "$MODEL" --prompt "${1:-cat face noto}" --seed "${2:-0}" \
  --out out/adtree.png --stats out/adtree-stats.json --scale 4
echo "image: $(pwd)/out/adtree.png   statistics: $(pwd)/out/adtree-stats.json"
