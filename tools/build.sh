#!/usr/bin/env bash
# Installs missing Debian packages, then configures and builds the release preset.
# Shared by tools/run.sh, tools/test.sh and CI, so all three build the same way.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"
cmake --preset release >/dev/null
# 2 parallel jobs: libtorch translation units need ~1.5 GB of memory each.
cmake --build --preset release -j "${ADTREE_JOBS:-2}"
