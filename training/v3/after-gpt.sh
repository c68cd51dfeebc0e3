#!/usr/bin/env bash
# The stages after the v3 GPT (training/v3/README.md, "After the GPT", points here), chained so
# that no core idles between them. Waits for the GPT run to finish; each stage is skipped when its output exists,
# and the drafter resumes from its checkpoint, so the script can be started again in a later session.
# Usage, from the repository root: training/v3/after-gpt.sh [RUN_FOLDER, default out/v3]
set -euo pipefail
A=$PWD/build/release/bin/adtree
cd "${1:-out/v3}"
log() { echo "[$(date +%H:%M:%S)] $*"; }
while pgrep -f 'train gpt' >/dev/null; do sleep 20; done
[[ -f runs/gpt/gpt.safetensors ]] || { log "GPT not finished"; exit 1; }
log "GPT finished"
if [[ ! -f runs/drafter/drafter.safetensors ]]; then
  R=(); [[ -f runs/drafter/checkpoint.safetensors ]] && R=(--resume)
  log "drafter ${R[*]:-}"
  nice -n 10 $A train drafter --data emoji64.safetensors --gpt runs/gpt --out runs/drafter \
    --steps 3000 --batch 8 --lr 1e-3 --seed 0 --log-every 20 --threads 2 --matmul ${MATMUL:-bf16} --max-minutes ${MINUTES:-600} \
    --config '{"self_samples":1024,"self_eval_samples":128,"eval_every":1000,"eval_images":128,"warmup":100,"checkpoint_every":50}' \
    "${R[@]}" > runs/drafter-train.log 2>&1 || { log "drafter failed"; exit 1; }
  [[ -f runs/drafter/drafter.safetensors ]] || { log "drafter stopped before the end"; exit 0; }
fi
log "assemble"
[[ -d model ]] || $A train assemble --vq runs/vq --gpt runs/gpt --drafter runs/drafter \
  --data emoji64.safetensors --out model --dtype fp16 --name emoji \
  --description "Emoji pictures from captions, 11M-parameter LlamaGen-style GPT with an EAGLE-1 draft head"
log "fidelity (train)"
[[ -f fid/fidelity.json ]] || $A train fidelity --model model --data emoji64.safetensors --prompts 192 --cfg 3 --out fid > fid.log 2>&1
log "fidelity (48 training prompts: the card's sample grid)"
[[ -f fid-48/fidelity.json ]] || $A train fidelity --model model --data emoji64.safetensors --prompts 48 --cfg 3 --out fid-48 > fid-48.log 2>&1
log "fidelity (validation)"
[[ -f fid-val/fidelity.json ]] || $A train fidelity --model model --data emoji64.safetensors --prompts 24 --cfg 3 --split validation --out fid-val > fid-val.log 2>&1
log "bench"
P="red apple noto;grinning face twemoji;rocket noto;dog face twemoji"
[[ -f bench-v3.json ]] || ADTREE_THREADS=2 $A bench --model model \
  --method ar,dynamic:coupled,adt:coupled,sjd:coupled --budget auto --prompts "$P" --seeds 2 --reps 10 \
  --blocks 1,2,4,8,9,16,17,32 --json bench-v3.json > bench-v3.txt 2>&1
log "done"
