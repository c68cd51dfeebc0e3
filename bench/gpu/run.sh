#!/usr/bin/env bash
# The one GPU run (docs/design/GPU.md), in one call and within 8 minutes:
#   1. configure and build core + CLI against the CUDA libtorch of the machine's python, with the
#      header-only dependencies that tools/gpu-deps.sh carried into third_party/;
#   2. identity on the device: every lossless method commits AR's tokens, greedy and coupled
#      (`--verify coupled`) at T = 1, in fp32 and bf16 (a mismatch is reported, not hidden: bf16 rounds differently for
#      a tree of many tokens than for one);
#   3. the bench: the forward cost curve (one token against 8 / 16 / 32 / 64-node blocks) and every
#      method on the shipped model (draft-tree steps on the device: --device-step auto), the tree
#      methods again with the host step, and the cost curve of a LlamaGen-XL-shaped random model;
#   4. a short table last; every result as JSON under OUTDIR.
# The cost curve is timed eagerly, on fixed shapes and as CUDA graph replays (where built).
# Usage: bench/gpu/run.sh OUTDIR                          on the GPU machine
#        DEVICE=cpu BIG=tiny bench/gpu/run.sh OUTDIR      the CPU rehearsal (Debian's libtorch)
set -euo pipefail
OUT=${1:?usage: bench/gpu/run.sh OUTDIR}
DEVICE=${DEVICE:-cuda}
BIG=${BIG:-XL}
# The identity runs take the default step (on a GPU: the device step) and then the other one.
OTHER=$([ "$DEVICE" = cpu ] && echo on || echo off)
JOBS=${JOBS:-$(nproc)}
BUILD=${BUILD:-build/gpu}
cd "$(dirname "$0")/../.."
mkdir -p "$OUT"
t0=$SECONDS
step() { echo "== $* ($((SECONDS - t0)) s)" | tee -a "$OUT/run.log"; }

step "configure and build ($JOBS jobs)"
DEVICE=$DEVICE JOBS=$JOBS BUILD=$BUILD bench/gpu/build.sh "$OUT"
B=$BUILD/bin/adtree
MODEL=resources/models/emoji

step "identity on $DEVICE"
gen() {  # NAME ARGS...: one generation's statistics (with tokens) into OUT/id/NAME.json
  local name=$1
  shift
  "$B" generate --model "$MODEL" --device "$DEVICE" --prompt "red apple noto" --seed 1 \
    --out "$OUT/id/$name.png" --stats "$OUT/id/$name.json" --quiet "$@"
}
mkdir -p "$OUT/id"
for dtype in fp32 bf16; do
  for t in 0 1; do
    gen "ar-$dtype-t$t" --dtype "$dtype" --temperature "$t" --method ar
    for m in static dynamic adt sjd pathspec sjd-pac "pjd --pjd-rows 1"; do
      # shellcheck disable=SC2086
      gen "${m%% *}-$dtype-t$t" --dtype "$dtype" --temperature "$t" --verify coupled --method $m
    done
    for m in dynamic adt; do  # the tree methods once more, by the other kind of step
      gen "$m-$OTHER-$dtype-t$t" --dtype "$dtype" --temperature "$t" --verify coupled --method $m \
        --device-step "$OTHER"
    done
  done
done

step "bench, shipped model"
"$B" bench --model "$MODEL" --device "$DEVICE" --dtype bf16 --seeds 1 --reps 5 \
  --method ar,static,dynamic,adt,sjd,sjd-pac,pjd --blocks 1,8,16,32,64 \
  --json "$OUT/bench-emoji.json" >"$OUT/bench-emoji.txt" 2>&1
step "bench, shipped model, host step (what the device step saves)"
"$B" bench --model "$MODEL" --device "$DEVICE" --dtype bf16 --seeds 1 --reps 5 \
  --method ar,dynamic,adt --device-step off --blocks 1 \
  --json "$OUT/bench-emoji-host.json" >"$OUT/bench-emoji-host.txt" 2>&1
step "bench, $BIG-shaped random model (cost only: random drafts are rarely accepted)"
"$B" bench --config "$BIG" --device "$DEVICE" --dtype bf16 --seeds 1 --prompts a --reps 5 \
  --method ar,dynamic,adt,sjd --blocks 1,8,16,32,64 \
  --json "$OUT/bench-$BIG.json" >"$OUT/bench-$BIG.txt" 2>&1

step table
python3 bench/gpu/table.py "$OUT" "$BIG" | tee "$OUT/table.md"
echo "total $((SECONDS - t0)) s" | tee -a "$OUT/run.log"
