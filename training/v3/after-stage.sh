#!/usr/bin/env bash
# What follows a finished GPT stage of the v3 model, chained so that no core idles between the
# steps: the GPT's prompt fidelity on the card's 192 training prompts (AR sampling, so the head
# does not change it), a draft head trained for what is verified (head-verified.sh), warm-started
# from the shipped head on this stage's own samples,
# the model directory (fp16, the GPT in shards), the 48-prompt and unseen grids, and the bench.
# Each step is skipped when its output exists, so the script can be started again.
# Usage, from the repository root: training/v3/after-stage.sh STAGE [RUN_FOLDER, default out/v3]
#   STAGE is a finished 'train gpt' run folder under runs/, e.g. gpt3.
set -euo pipefail
S=${1:?usage: after-stage.sh STAGE [RUN_FOLDER]}
A=$PWD/build/release/bin/adtree
H=$(cd "$(dirname "$0")" && pwd)
cd "${2:-out/v3}"
log() { echo "[$(date +%H:%M:%S)] $*"; }
D=emoji64.safetensors
[[ -f runs/$S/gpt.safetensors.index.json || -f runs/$S/gpt.safetensors ]] || { log "$S not finished"; exit 1; }
log "$S: fidelity of the GPT alone, 192 training prompts"
[[ -d model-$S-gpt ]] || $A train assemble --vq runs/vq --gpt runs/$S --data $D --out model-$S-gpt --dtype fp16
[[ -f fid-$S/fidelity.json ]] || $A train fidelity --model model-$S-gpt --data $D --prompts 192 --cfg 3 --out fid-$S > fid-$S.log 2>&1
log "$S: draft head for what is verified, warm-started from the shipped head (head-verified.sh)"
if [[ ! -f runs/drafter-$S/drafter.safetensors ]]; then
  [[ -f runs/$S/tokens.safetensors ]] || cp runs/gpt2/tokens.safetensors runs/$S/
  GPT=runs/$S FROM=runs/drafter-verified OUT=runs/drafter-$S NICE=10 \
    bash "$H/head-verified.sh" "$PWD" > runs/drafter-$S-train.log 2>&1 || { log "drafter failed"; exit 1; }
fi
log "$S: assemble"
[[ -d model-$S ]] || $A train assemble --vq runs/vq --gpt runs/$S --drafter runs/drafter-$S --data $D \
  --out model-$S --dtype fp16 --name emoji \
  --description "Emoji pictures from captions, 11M-parameter LlamaGen-style GPT with an EAGLE-1 draft head"
log "$S: grids (48 training prompts, 24 unseen)"
[[ -f fid-48-$S/fidelity.json ]] || $A train fidelity --model model-$S --data $D --prompts 48 --cfg 3 --out fid-48-$S > fid-48-$S.log 2>&1
[[ -f fid-val-$S/fidelity.json ]] || $A train fidelity --model model-$S --data $D --prompts 24 --cfg 3 --split validation --out fid-val-$S > fid-val-$S.log 2>&1
log "$S: bench"
P="red apple noto;grinning face twemoji;rocket noto;dog face twemoji"
[[ -f bench-$S.json ]] || ADTREE_THREADS=2 $A bench --model model-$S \
  --method ar,dynamic:coupled,adt:coupled,sjd:coupled --budget auto --prompts "$P" --seeds 2 --reps 10 \
  --blocks 1,2,4,8,9,16,17,32 --json bench-$S.json > bench-$S.txt 2>&1
log "$S: done"
