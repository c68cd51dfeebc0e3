#!/usr/bin/env bash
# Screenshots of the desktop app for docs/screenshots: idle, mid-generation, finished
# ADT-Tree run and a hovered cell, at 1280x800 and 1920x1080, on a virtual X server (Xvfb).
# Usage: tools/screenshots.sh [MODEL_DIR] [PROMPT]
# Needs xvfb, imagemagick (import) and xdotool. Timings (MID_S, FIN_S) are seconds after start;
# the mid-generation shot wants the picture about half drawn, so it depends on the machine.
# ONLY_MAIN=1 takes just those four shots per size, not the teaching views; ONLY_METHODS=1 just
# the PJD and CASCADE views; ONLY_TEACH=1 just the teaching views.
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${1:-resources/models/emoji}
# The teaching views: docs/teaching.md quotes numbers read off them, on the model they were taken
# with, emoji-v2 (the default model until 2026-12-02), and ADT-Tree's budget rule of that day,
# fixed (head trees of the adjacency shape; the cost rule's chains of free guesses on a CPU are in
# the main views). The PJD and CASCADE views use the model too.
TEACH_MODEL=${TEACH_MODEL:-resources/models/emoji-v2}
# The main views show the studio's first example prompt, one the default model draws on every
# seed tried (its card, "Example prompts"); the teaching views keep the prompt their numbers were
# read with.
PROMPT=${2:-cat face noto}
TEACH_PROMPT=${TEACH_PROMPT:-grinning face noto}
APP=build/release/bin/adtree-studio
OUT=docs/screenshots
mkdir -p "$OUT"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export XDG_CONFIG_HOME=$tmp/config XDG_DATA_HOME=$tmp/data XDG_RUNTIME_DIR=$tmp/runtime

# Pixels of the progress bar's fill (its blue) in the top band of a shot.
bar_fill() {  # FILE W
  convert "$1" -crop "${2}x160+0+0" +repage -fuzz 8% -fill black +opaque "rgb(55,158,223)" \
    -fill white -opaque "rgb(55,158,223)" -format '%[fx:round(mean*w*h)]' info:
}

# The mid-generation shot: a run lasts about a second on two cores, too short to catch with one
# sleep, so a burst of frames from MID_S on, and the one whose bar is nearest half the finished
# shot's fill is kept.
pick_mid() {  # W H
  local full best=
  full=$(bar_fill "$OUT/finished-adt-${1}x${2}.png" "$1")
  best=$(for f in "$tmp"/mid-*.png; do echo "$(($(bar_fill "$f" "$1") * 2 - full)) $f"; done |
         sed 's/^-//' | sort -n | head -1 | cut -d' ' -f2)
  cp "$best" "$OUT/running-adt-${1}x${2}.png"
  rm -f "$tmp"/mid-*.png
}

shoot() {  # W H
  local W=$1 H=$2 xp ap
  Xvfb :97 -screen 0 "${W}x${H}x24" -nolisten tcp >/dev/null 2>&1 &
  xp=$!
  sleep 1
  export DISPLAY=:97
  rm -rf "$XDG_CONFIG_HOME"
  "$APP" --size "${W}x${H}" "$MODEL" --gallery "$tmp/g-main-$W" >"$tmp/app.log" 2>&1 &
  ap=$!
  sleep "${IDLE_S:-4}"
  import -window root "$OUT/idle-${W}x${H}.png"
  kill "$ap"; wait "$ap" 2>/dev/null || true
  "$APP" --size "${W}x${H}" "$MODEL" --gallery "$tmp/g-main-$W" --run "$PROMPT" --method adt \
    --seed "${SEED:-3}" >>"$tmp/app.log" 2>&1 &
  ap=$!
  sleep "${MID_S:-2}"
  for i in $(seq 10 $((10 + ${MID_FRAMES:-14}))); do import -window root "$tmp/mid-$i.png"; done
  sleep "${FIN_S:-8}"
  import -window root "$OUT/finished-adt-${W}x${H}.png"
  pick_mid "$W" "$H"
  # Hover a cell of the picture (the image view is left of centre, in the upper half).
  local hx=$((W * 35 / 100)) hy=$((H * 3 / 10))
  xdotool mousemove "$hx" "$hy"; sleep 0.3; xdotool mousemove $((hx + 3)) "$hy"; sleep 1.5
  import -window root "$OUT/hover-${W}x${H}.png"
  kill "$ap"; wait "$ap" 2>/dev/null || true
  kill "$xp"; wait "$xp" 2>/dev/null || true
}

# The teaching and research views (docs/teaching.md): a finished run replayed at one step with a
# cell's distribution open; three methods in the history with their histograms; compare.
teach() {  # W H NAME WAIT ARGS...
  local W=$1 H=$2 name=$3 wait=$4 xp ap
  shift 4
  Xvfb :97 -screen 0 "${W}x${H}x24" -nolisten tcp >/dev/null 2>&1 &
  xp=$!
  sleep 1
  export DISPLAY=:97
  rm -rf "$XDG_CONFIG_HOME"
  # Each view in its own gallery folder: the history shows this run's pictures only.
  "$APP" --size "${W}x${H}" "$TEACH_MODEL" --gallery "$tmp/g-$name-$W" --run "$TEACH_PROMPT" \
    --seed "${SEED:-3}" --set adt.budget_rule=fixed "$@" >>"$tmp/app.log" 2>&1 &
  ap=$!
  sleep "$wait"
  import -window root "$OUT/$name-${W}x${H}.png"
  kill "$ap"; wait "$ap" 2>/dev/null || true
  kill "$xp"; wait "$xp" 2>/dev/null || true
}

# The gallery, the queue and a restored PNG (docs/GUI.md "Gallery, batches and the queue"): one
# session makes four pictures (Count 4) into a gallery; the next lists them beside its own run; a
# batch of 12 shows the queue; a picture of the gallery opened as the argument restores its settings.
gallery() {  # W H
  local W=$1 H=$2 xp ap gal=$tmp/gallery
  Xvfb :97 -screen 0 "${W}x${H}x24" -nolisten tcp >/dev/null 2>&1 &
  xp=$!
  sleep 1
  export DISPLAY=:97
  rm -rf "$XDG_CONFIG_HOME" "$gal"
  "$APP" --size "${W}x${H}" "$MODEL" --gallery "$gal" --run "$PROMPT" --method adt --seed 3 \
    --count 4 >>"$tmp/app.log" 2>&1 &
  ap=$!
  sleep "$((${FIN_S:-8} * 2))"
  kill "$ap"; wait "$ap" 2>/dev/null || true
  # Without a window manager a restored geometry lands 20 px low: each launch starts afresh.
  rm -rf "$XDG_CONFIG_HOME"
  "$APP" --size "${W}x${H}" "$MODEL" --gallery "$gal" --run "santa claus noto" --method adt \
    --seed 8 --show-dock history >>"$tmp/app.log" 2>&1 &
  ap=$!
  sleep "${FIN_S:-8}"
  import -window root "$OUT/gallery-${W}x${H}.png"
  kill "$ap"; wait "$ap" 2>/dev/null || true
  rm -rf "$XDG_CONFIG_HOME"
  "$APP" --size "${W}x${H}" "$MODEL" --gallery "$tmp/gallery2" --run "$PROMPT" --method adt \
    --seed 20 --count 12 --show-dock queue >>"$tmp/app.log" 2>&1 &
  ap=$!
  sleep "${QUEUE_S:-6}"
  import -window root "$OUT/queue-${W}x${H}.png"
  kill "$ap"; wait "$ap" 2>/dev/null || true
  rm -rf "$XDG_CONFIG_HOME"
  local pic
  pic=$(ls "$gal"/*.png | head -1)
  "$APP" --size "${W}x${H}" --gallery "$gal" "$pic" >>"$tmp/app.log" 2>&1 &
  ap=$!
  sleep "${IDLE_S:-4}"
  import -window root "$OUT/restored-png-${W}x${H}.png"
  kill "$ap"; wait "$ap" 2>/dev/null || true
  kill "$xp"; wait "$xp" 2>/dev/null || true
}

# The newer seed methods (docs/pjd.md, docs/cascade.md): a finished PJD run and ADT-Tree under
# CASCADE with its settings section.
methods() {
  teach 1280 800 finished-pjd "${FIN_S:-8}" --method pjd
  teach 1280 800 cascade "${FIN_S:-8}" --method adt --relax cascade
}
if [[ "${ONLY_METHODS:-0}" == 1 ]]; then methods; echo "wrote $OUT/{finished-pjd,cascade}-1280x800.png"; exit 0; fi
if [[ "${ONLY_GALLERY:-0}" == 1 ]]; then gallery 1280 800; echo "wrote $OUT/{gallery,queue,restored-png}-1280x800.png"; exit 0; fi
if [[ "${ONLY_TEACH:-0}" != 1 ]]; then
  shoot 1280 800
  shoot 1920 1080
  gallery 1280 800
fi
if [[ "${ONLY_MAIN:-0}" == 1 ]]; then echo "wrote $OUT/{idle,running-adt,finished-adt,hover}-*.png"; exit 0; fi
teach 1920 1080 replay-inspector "${FIN_S:-8}" --method adt --replay-step 41 --inspect 30
teach 1280 800 replay-inspector "${FIN_S:-8}" --method adt --replay-step 41 --inspect 30
teach 1920 1080 histograms "$((${FIN_S:-8} * 2))" --method ar --methods dynamic,adt --show-dock histograms
teach 1920 1080 history "$((${FIN_S:-8} * 2))" --method ar --methods dynamic,adt --show-dock history
teach 1920 1080 compare "$((${FIN_S:-8} * 2))" --method adt --compare
if [[ "${ONLY_TEACH:-0}" == 1 ]]; then echo "wrote $OUT/{replay-inspector,histograms,history,compare}-*.png"; exit 0; fi
methods
echo "wrote $OUT/{idle,running-adt,finished-adt,hover}-{1280x800,1920x1080}.png and the teaching views"
