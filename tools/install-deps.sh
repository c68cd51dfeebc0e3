#!/usr/bin/env bash
# Installs the Debian 12 packages ADT-Tree Studio needs, and only those that are missing.
# Idempotent: a second run installs nothing. Used by README's two commands and by CI.
set -euo pipefail

PKGS=(
  build-essential cmake ninja-build ccache pkg-config   # toolchain, fast rebuilds
  clang-format                                          # the house style, checked in CI
  libtorch-dev                                          # tensors, models, training (CPU libtorch 1.13)
  libopenblas0-pthread                                  # fast BLAS behind Debian's libtorch
  nlohmann-json3-dev                                    # JSON: model.json, safetensors headers, stats
  libminizip-dev                                        # the zip container of torch.save() checkpoints
  libxxhash-dev                                         # checksums of the caches (XXH3)
  libssl-dev                                            # SHA-256 of a model's files (libcrypto), in PNG settings
  libopencv-dev                                         # PNG I/O, resizing, colour maps (core/imaging)
  libgtest-dev libgmock-dev                             # unit tests
  qt6-base-dev libqcustomplot-dev                       # the desktop GUI and its plots
  qt6-svg-dev                                           # tree view export as SVG (QSvgGenerator)
  xvfb xauth                                            # headless GUI tests and screenshots
  imagemagick                                           # screenshots; a tool we did not write reads PNG settings (test)
  help2man dpkg-dev                                     # man pages from --help; the .deb (shlibdeps)
  appstream desktop-file-utils                          # validate the metainfo and desktop entry
  nodejs npm                                            # `npm pack` fetches the emoji training data
  python3-torch                                         # LlamaGen converter + parity reference (tests)
  libsentencepiece-dev                                  # T5's tokenizer: typed prompts for LlamaGen t2i models
  python3-sentencepiece                                 # the T5 reference fixtures and tokenizer parity (tests)
)
# Fuzzing (tools/fuzz.sh) needs clang and its libFuzzer runtime; CI does not fuzz, so on request.
if [[ "${ADTREE_FUZZ_DEPS:-0}" == 1 ]]; then
  PKGS+=(clang-14 libclang-rt-14-dev)
fi
if [[ "${ADTREE_NO_GUI:-0}" == 1 ]]; then
  PKGS=("${PKGS[@]/qt6-base-dev/}"); PKGS=("${PKGS[@]/libqcustomplot-dev/}"); PKGS=("${PKGS[@]/qt6-svg-dev/}")
fi

missing=()
for p in "${PKGS[@]}"; do
  [[ -z "$p" ]] && continue
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# node/npm may come from outside Debian (e.g. a preinstalled Node.js); accept any working npm.
if command -v npm >/dev/null 2>&1; then
  missing=("${missing[@]/nodejs/}"); missing=("${missing[@]/npm/}")
fi
clean=(); for p in "${missing[@]}"; do [[ -n "$p" ]] && clean+=("$p"); done

if ((${#clean[@]})); then
  echo "install-deps: installing ${clean[*]}"
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${clean[@]}"
else
  echo "install-deps: all packages present"
fi
