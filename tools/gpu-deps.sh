#!/usr/bin/env bash
# The header-only dependencies a GPU machine lacks (docs/design/GPU.md: no package registry there),
# unpacked from their Debian packages into third_party/ (ignored by git), so that they travel with
# the working tree to the device run. Run on a CPU machine before the GPU run.
# Usage: tools/gpu-deps.sh
set -euo pipefail
cd "$(dirname "$0")/.."
dest=third_party/nlohmann_json
if [[ -f $dest/usr/share/cmake/nlohmann_json/nlohmann_jsonConfig.cmake ]]; then
  echo "gpu-deps: $dest is there"
  exit 0
fi
tmp=$(mktemp -d)
chmod a+rwx "$tmp"  # apt downloads as its own user
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get download nlohmann-json3-dev >/dev/null)
mkdir -p "$dest"
dpkg -x "$tmp"/nlohmann-json3-dev_*.deb "$dest"
echo "gpu-deps: unpacked nlohmann-json into $dest ($(du -sh "$dest" | cut -f1))"
