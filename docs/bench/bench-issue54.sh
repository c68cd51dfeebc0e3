#!/usr/bin/env bash
# The measurements of docs/PERFORMANCE.md, "Verification blocks and the tree that ran" (issue 54):
# the block cost curve by part (bf16 on the CPU's best kernel, without the AMX tiles and on AVX2;
# fp32 on AVX-512 and AVX2),
# then the methods against AR in bf16 and fp32. About 20 minutes on two cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
B=build/release/bin/adtree
OUT=${1:-docs/bench}
P="cat face noto;santa claus noto;snowman noto;grinning face noto"
export ADTREE_THREADS=2
lscpu | grep -E "Model name|CPU family|Model:|Flags" | sed 's/Flags:.*amx_bf16.*/Flags: ... amx_bf16 (AMX) .../' > "$OUT/issue54-cpu.txt"
# RUN names the precision and, after a dash, the kernel forced ($ADTREE_KERNEL; none: the best).
kernel_of() { [[ $1 == *-* ]] && echo "${1#*-}" || true; }
for run in bf16 bf16-avx512bf16 bf16-avx2 fp32 fp32-avx2; do
  dt=${run%%-*}
  ADTREE_KERNEL=$(kernel_of "$run") $B bench --dtype "$dt" --method ar --prompts "cat face noto" --seeds 1 \
    --blocks 1,2,4,8,16,32 --reps 20 --json "$OUT/issue54-blocks-$run.json" > "$OUT/issue54-blocks-$run.txt"
done
for run in bf16 bf16-avx512bf16 fp32; do
  dt=${run%%-*}
  ADTREE_KERNEL=$(kernel_of "$run") $B bench --dtype "$dt" --method ar,adt:coupled,dynamic:coupled,sjd:coupled \
    --budget auto --prompts "$P" --seeds 2 --rounds 2 --reps 10 --blocks 1,2,4,8,16,32 \
    --json "$OUT/issue54-methods-$run.json" > "$OUT/issue54-methods-$run.txt"
done
