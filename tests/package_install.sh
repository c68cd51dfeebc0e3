#!/usr/bin/env bash
# Install test of the Debian package: build the .deb with CPack, check its metadata,
# unpack it into a scratch root (as dpkg would lay it out, without touching the system), run the
# installed `adtree generate` on the installed shipped model, start the installed `adtree-studio`
# offscreen for one generation, validate the desktop entry and AppStream metainfo, and remove
# the scratch root again.
# Usage: package_install.sh BUILD_DIR WORK_DIR
set -euo pipefail
build=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
trap 'rm -rf "$work/root"' EXIT

(cd "$build" && cpack -G DEB -B "$work/pkg" > "$work/cpack.log" 2>&1) || { cat "$work/cpack.log"; exit 1; }
deb=$(ls "$work"/pkg/adtree-studio_*.deb)
echo "package: $deb ($(du -h "$deb" | cut -f1))"

# Metadata: the name, and the runtime libraries the programs need.
info=$(dpkg-deb -I "$deb")
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
for lib in libtorch libqt6widgets6 libqcustomplot libopencv-imgcodecs qt6-qpa-plugins libopenblas0-pthread \
           libsentencepiece0; do
  grep -q "$lib" <<<"$depends" || { echo "FAIL: Depends lacks $lib"; exit 1; }
done
grep -q "Package: adtree-studio" <<<"$info" || { echo "FAIL: package name"; exit 1; }

# Contents: everything a user finds after installing.
contents=$(dpkg-deb -c "$deb")
for f in ./usr/bin/adtree ./usr/bin/adtree-studio ./usr/lib/adtree-studio/libadtree_spm.so \
         ./usr/share/adtree-studio/models/emoji/model.json \
         ./usr/share/adtree-studio/models/emoji/gpt.safetensors.index.json \
         ./usr/share/adtree-studio/models/emoji/gpt-00001-of-00002.safetensors \
         ./usr/share/adtree-studio/models/emoji/gpt-00002-of-00002.safetensors \
         ./usr/share/adtree-studio/models/emoji-v2/gpt.safetensors \
         ./usr/share/adtree-studio/models/emoji-v3/gpt-00001-of-00002.safetensors \
         ./usr/share/adtree-studio/models/emoji-continuous/target.safetensors \
         ./usr/share/adtree-studio/models/emoji-continuous/draft.safetensors \
         ./usr/share/doc/adtree-studio/MODEL_CARD-emoji-continuous.md \
         ./usr/share/applications/io.github.adtreestudio.AdtreeStudio.desktop \
         ./usr/share/metainfo/io.github.adtreestudio.AdtreeStudio.metainfo.xml \
         ./usr/share/icons/hicolor/scalable/apps/adtree-studio.svg \
         ./usr/share/icons/hicolor/48x48/apps/adtree-studio.png \
         ./usr/share/man/man1/adtree.1.gz ./usr/share/doc/adtree-studio/copyright; do
  grep -q " $f\$" <<<"$contents" || { echo "FAIL: $f missing from the package"; exit 1; }
done
if grep -q "$(cd "$build" && pwd)" <(strings "$build/bin/adtree"); then
  echo "FAIL: the adtree binary has the build directory compiled in"; exit 1
fi

root="$work/root"
dpkg-deb -x "$deb" "$root"
desktop-file-validate "$root/usr/share/applications/io.github.adtreestudio.AdtreeStudio.desktop"
appstreamcli validate --no-net "$root/usr/share/metainfo/io.github.adtreestudio.AdtreeStudio.metainfo.xml"

# The installed CLI finds the installed model by itself (no --model, no build paths).
env -u ADTREE_MODEL "$root/usr/bin/adtree" info | grep -q "$root/usr/share/adtree-studio/models/emoji" \
  || { echo "FAIL: installed adtree does not find its shipped model"; exit 1; }
env -u ADTREE_MODEL "$root/usr/bin/adtree" generate --prompt "red apple noto" --seed 1 --method adt \
  --out "$work/apple.png" --stats "$work/apple.json"
test -s "$work/apple.png"
grep -q '"tau"' "$work/apple.json"
# The continuous family's shipped model, with CSpD and its draft model.
"$root/usr/bin/adtree" generate --model "$root/usr/share/adtree-studio/models/emoji-continuous" \
  --prompt "woman walking noto" --method cspd --out "$work/walking.png" --quiet
test -s "$work/walking.png"

# Typed prompts for a t2i model through the installed SentencePiece plug-in (a random model with its
# tiny random T5, whose tokenizer is trained by the plug-in too).
"$root/usr/bin/adtree" model random --config micro --cond t5 --out "$work/t2i" >/dev/null
"$root/usr/bin/adtree" generate --model "$work/t2i" --prompt "a red cat" --out "$work/t2i.png" \
  | grep -q "prompt encoded by T5" || { echo "FAIL: the installed CLI cannot encode prompts"; exit 1; }

# The installed GUI, offscreen: one scripted generation on the shipped model, then exit.
env -u ADTREE_MODEL QT_QPA_PLATFORM=offscreen XDG_CONFIG_HOME="$work/config" XDG_DATA_HOME="$work/data" \
  XDG_RUNTIME_DIR="$work/runtime" "$root/usr/bin/adtree-studio" --run "red apple noto" --method ar \
  --seed 1 --benchmark 1 > "$work/studio.log" 2>&1 || { cat "$work/studio.log"; exit 1; }
grep -q "decode_ms" "$work/studio.log" || { cat "$work/studio.log"; echo "FAIL: no run report"; exit 1; }

rm -rf "$root"
test ! -e "$root"
echo "package install test passed"
