#!/usr/bin/env bash
# Configures and builds core + CLI for a device run (docs/design/GPU.md): against the CUDA libtorch
# of the machine's python when DEVICE is cuda, with the header-only dependencies tools/gpu-deps.sh
# carried into third_party/. Shared by bench/gpu/run.sh and bench/gpu/train.sh.
# Usage: bench/gpu/build.sh OUTDIR    (DEVICE, JOBS, BUILD from the environment)
set -euo pipefail
OUT=${1:?usage: bench/gpu/build.sh OUTDIR}
DEVICE=${DEVICE:-cuda}
JOBS=${JOBS:-$(nproc)}
BUILD=${BUILD:-build/gpu}
cd "$(dirname "$0")/../.."
mkdir -p "$OUT"
args=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DADTREE_GUI=OFF -DADTREE_TESTS=OFF)
if [[ $DEVICE == cuda* ]]; then
  args+=(-DADTREE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90
    "-DCMAKE_PREFIX_PATH=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)')")
fi
nl=third_party/nlohmann_json/usr/share/cmake/nlohmann_json
[[ -d $nl ]] && args+=("-Dnlohmann_json_DIR=$PWD/$nl")
cmake -S . -B "$BUILD" "${args[@]}" >"$OUT/configure.log" 2>&1 || {
  tail -20 "$OUT/configure.log"
  exit 1
}
cmake --build "$BUILD" -j "$JOBS" --target adtree >"$OUT/build.log" 2>&1 || {
  tail -30 "$OUT/build.log"
  exit 1
}
