#!/usr/bin/env python3
"""The house rules that a reader of docs/design/ARCHITECTURE.md relies on, checked on the sources.

- no include cycle between units in core/ or ui/ (a unit is a header and its source: x.h + x.cpp);
- no source folder (core/, ui/, app/, tests/) with more than MAX_UNITS units;
- no include from a lower layer to a higher one (core never includes ui or app, ui never app; tests
  may include anything, nothing includes tests).

Exit 0 when all hold, 1 with one line per breach otherwise. Usage: tools/check-house.py [ROOT]
"""
import os
import re
import sys

MAX_UNITS = 20
SOURCE_ROOTS = ["core", "ui", "app", "tests"]
# Each include root: the directory "#include" paths are relative to, and the layer it belongs to.
LAYERS = {"core": 0, "ui": 1, "app": 2, "tests": 3}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
EXTS = (".h", ".cpp")


def units(root):
    """Maps unit name (path without extension, relative to ROOT) to its files."""
    found = {}
    for top in SOURCE_ROOTS:
        for folder, _, files in os.walk(os.path.join(root, top)):
            for name in files:
                if name.endswith(EXTS):
                    path = os.path.relpath(os.path.join(folder, name), root)
                    found.setdefault(os.path.splitext(path)[0], []).append(path)
    return found


def resolve(root, including_file, target):
    """The unit an include names: relative to the including file's folder, then to core/ or ui/."""
    bases = [os.path.dirname(including_file), "core", "ui", ""]
    for base in bases:
        candidate = os.path.normpath(os.path.join(base, target))
        if os.path.exists(os.path.join(root, candidate)):
            return os.path.splitext(candidate)[0]
    return None  # a system or third-party header


def graph(root, found):
    edges = {u: set() for u in found}
    for unit, files in found.items():
        for path in files:
            with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
                text = f.read()
            for target in INCLUDE.findall(text):
                dep = resolve(root, path, target)
                if dep and dep != unit and dep in found:
                    edges[unit].add(dep)
    return edges


def cycles(edges, scope):
    """Strongly connected components of more than one unit, among units under the scope folders."""
    nodes = [u for u in edges if u.split("/")[0] in scope]
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w.split("/")[0] not in scope:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in nodes:
        if v not in index:
            visit(v)
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    found = units(root)
    edges = graph(root, found)
    breaches = []
    for comp in cycles(edges, {"core", "ui"}):
        breaches.append("include cycle: " + " <-> ".join(comp))
    per_folder = {}
    for unit in found:
        per_folder.setdefault(os.path.dirname(unit), 0)
        per_folder[os.path.dirname(unit)] += 1
    for folder, count in sorted(per_folder.items()):
        if count > MAX_UNITS:
            breaches.append(f"folder {folder} holds {count} units (at most {MAX_UNITS})")
    for unit, deps in edges.items():
        for dep in deps:
            if LAYERS[dep.split("/")[0]] > LAYERS[unit.split("/")[0]]:
                breaches.append(f"upward include: {unit} includes {dep}")
    for line in sorted(breaches):
        print(line)
    largest = max(per_folder.items(), key=lambda kv: kv[1])
    print(f"{len(found)} units in {len(per_folder)} folders; largest {largest[0]} ({largest[1]}); "
          f"{len(breaches)} breaches")
    return 1 if breaches else 0


if __name__ == "__main__":
    sys.exit(main())
