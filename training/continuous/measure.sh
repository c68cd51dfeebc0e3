#!/bin/sh
# The finished pair's measurements for its card (resources/models/emoji-continuous/MODEL_CARD.md)
# and docs/cspd.md, run from the run folder once the target has finished: the model directory with
# the card's defaults, then speed and fidelity. ADTREE: the binary; OUT: where the results go.
set -eu
ADTREE=${ADTREE:-adtree}
HERE=$(dirname "$0")
OUT=${OUT:-measure}
MODEL=${MODEL:-$OUT/emoji-continuous}
mkdir -p "$OUT"
"$ADTREE" train assemble-continuous --vae runs/vae --target runs/target --draft runs/draft \
  --out "$MODEL" --card "$HERE/card.json" --description "Emoji pictures from captions: \
continuous 4-number tokens of a KL VAE, a 6.5M-parameter MAR-style transformer with a diffusion \
head, and a 1.2M-parameter draft model for CSpD"
# Speed: AR and CSpD at several inner temperatures and gammas against one AR, in one run.
P="cat face noto;santa claus noto;snowman noto;red apple twemoji"
C=cspd@cspd-inner-temperature
"$ADTREE" bench --model "$MODEL" --prompts "$P" --seeds 2 --json "$OUT/bench.json" \
  --method "ar,$C=1@cspd-gamma=4,$C=42@cspd-gamma=4,$C=100@cspd-gamma=2,$C=100@cspd-gamma=4,\
$C=200@cspd-gamma=2,$C=200@cspd-gamma=4" | tee "$OUT/bench.txt"
# Fidelity of AR and of CSpD at the shipped defaults, the card's 192 training prompts, and AR on
# other seeds (the scale of CSpD's distance from AR); then CSpD at the paper's exact test (inner
# temperature 1) and at other relaxations, on the same prompts.
"$ADTREE" train fidelity --model "$MODEL" --data emoji64.safetensors \
  --tokens runs/target/tokens.safetensors --prompts 192 --method ar,cspd --out "$OUT/fidelity-192"
for T in 1 42 100; do
  "$ADTREE" train fidelity --model "$MODEL" --data emoji64.safetensors \
    --tokens runs/target/tokens.safetensors --prompts 192 --method ar,cspd \
    --cspd-inner-temperature "$T" --out "$OUT/fidelity-192-T$T"
done
# AR's fidelity under other sampling settings (48 prompts), against the defaults on the same prompts.
"$ADTREE" train fidelity --model "$MODEL" --data emoji64.safetensors \
  --tokens runs/target/tokens.safetensors --prompts 48 --method ar --out "$OUT/fidelity-48-default"
for S in "--cfg 1.5" "--cfg 5" "--temperature 0.8" "--diffusion-steps 50"; do
  NAME=$(echo "$S" | tr -d ' -')
  # shellcheck disable=SC2086 # S is two words: a flag and its value
  "$ADTREE" train fidelity --model "$MODEL" --data emoji64.safetensors \
    --tokens runs/target/tokens.safetensors --prompts 48 --method ar $S --out "$OUT/fidelity-48-$NAME"
done
