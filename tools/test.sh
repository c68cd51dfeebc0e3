#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to a passing test suite: set up, build, run ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/build.sh
ctest --preset release "$@"
