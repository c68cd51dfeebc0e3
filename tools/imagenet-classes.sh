#!/usr/bin/env bash
# Regenerates resources/imagenet/classes.json, the 1000 ImageNet-1k class names that LlamaGen's
# class-to-image models are indexed by (class i = line i). The names come from the npm package
# @tensorflow-models/mobilenet (Apache-2.0), fetched with `npm pack` like the emoji data; nothing
# else is downloaded. Run from anywhere; needs node and npm.
set -euo pipefail
cd "$(dirname "$0")/.."
pkg="@tensorflow-models/mobilenet@2.1.1"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "$pkg" >/dev/null && tar xzf ./*.tgz)
node - "$tmp/package/dist/imagenet_classes.js" "$pkg" >resources/imagenet/classes.json <<'JS'
const [file, pkg] = process.argv.slice(2);
const table = require(file).IMAGENET_CLASSES;
const classes = Array.from({length: 1000}, (_, i) => {
  if (!(i in table)) throw new Error(`class ${i} missing in ${file}`);
  return table[i];
});
process.stdout.write(JSON.stringify({
  source: `${pkg} (dist/imagenet_classes.js)`,
  license: 'Apache-2.0 (Copyright 2019 Google LLC)',
  note: 'ImageNet-1k class names in class-index order; synonyms separated by ", ".',
  classes,
}, null, 1) + '\n');
JS
echo "wrote resources/imagenet/classes.json"
