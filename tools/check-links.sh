#!/usr/bin/env bash
# Every relative link in every tracked Markdown file resolves: [text](target) and ![alt](target),
# where target is not a URL (http, https, mailto, ...) or an anchor of the same page. The #anchor
# is stripped and the path is resolved from the linking file's folder (a leading / from the
# repository root). Links inside fenced code blocks and inline code are not links.
# Usage: tools/check-links.sh [repository root]   (ctest runs it as docs_links_resolve)
# Exit 1, listing file:line -> target, when a target does not exist.
set -euo pipefail
root="${1:-$(dirname "$0")/..}"
cd "$root"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.md')
else  # an exported tree without .git
  mapfile -t files < <(find . -name '*.md' -not -path './build/*' -not -path './.git/*' | sed 's|^\./||' | sort)
fi
exec python3 - "${files[@]}" <<'PY'
import os, re, sys
from urllib.parse import unquote

SCHEME = re.compile(r'^[A-Za-z][A-Za-z0-9+.-]*:')    # http:, https:, mailto:, ...
FENCE = re.compile(r'^\s{0,3}(`{3,}|~{3,})')
INLINE_CODE = re.compile(r'(`+)(?:(?!\1).)+?\1')

def targets(line):
    """Yield the target of every inline link or image on one line."""
    i = 0
    while True:
        i = line.find('](', i)
        if i < 0:
            return
        j = i + 2
        while j < len(line) and line[j] in ' \t':
            j += 1
        if j < len(line) and line[j] == '<':            # [t](<path with spaces>)
            k = line.find('>', j)
            if k < 0:
                return
            yield line[j + 1:k]
            i = k
            continue
        depth, k = 0, j
        while k < len(line):
            c = line[k]
            if c == '(':
                depth += 1
            elif c == ')':
                if depth == 0:
                    break
                depth -= 1
            elif c in ' \t' and depth == 0:              # [t](path "title")
                break
            k += 1
        yield line[j:k]
        i = k

bad, checked = [], 0
for path in sys.argv[1:]:
    if not os.path.isfile(path):
        continue
    folder = os.path.dirname(path)
    fence = None
    with open(path, encoding='utf-8', errors='replace') as f:
        for n, line in enumerate(f, 1):
            m = FENCE.match(line)
            if m:
                mark = m.group(1)
                if fence is None:
                    fence = mark
                elif mark[0] == fence[0] and len(mark) >= len(fence) and not line.strip()[len(mark):].strip():
                    fence = None
                continue
            if fence is not None:
                continue
            for t in targets(INLINE_CODE.sub('', line)):
                t = t.strip()
                if not t or t.startswith('#') or SCHEME.match(t):
                    continue
                p = unquote(t.split('#', 1)[0].split('?', 1)[0])
                if not p:
                    continue
                full = p.lstrip('/') if p.startswith('/') else os.path.join(folder, p)
                checked += 1
                if not os.path.exists(full):
                    bad.append(f'{path}:{n} -> {t}')
if bad:
    print(f'check-links: {len(bad)} of {checked} relative links do not resolve:', file=sys.stderr)
    for b in bad:
        print('  ' + b, file=sys.stderr)
    sys.exit(1)
print(f'check-links: all {checked} relative links in {len(sys.argv) - 1} Markdown files resolve')
PY
