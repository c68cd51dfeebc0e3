#!/usr/bin/env python3
"""How often a picture's token repeats a neighbour's code: what the free candidates of cost-aware
ADT-Tree (docs/design/SPEC_DECODING.md 5.8) can hope for, and the priors of free_guesses.cpp.

Reads statistics files of AR runs (adtree generate --method ar --stats FILE.json) and prints, over
the cells from the second row on (not the first of a row): the share equal to the code above, to
the code on the left, to the left where the code above is not, and to either.

Usage: tools/free-guess-rates.py STATS.json...
  e.g. for s in 0 1 2; do for p in "cat face noto" "snowman noto"; do
         build/release/bin/adtree generate --prompt "$p" --seed $s --method ar \\
             --stats "/tmp/ar-${p// /_}-$s.json" --out /tmp/x.png --quiet; done; done
       tools/free-guess-rates.py /tmp/ar-*.json
"""
import json
import sys


def rates(files):
    n = above = left = left_where_above_missed = above_missed = either = 0
    for name in files:
        with open(name) as f:
            stats = json.load(f)
        tok = stats["tokens"]
        w = len(stats["grids"]["accept_len"][0])  # the grid's width
        for c in range(w, len(tok)):
            if c % w == 0:
                continue
            a, l = tok[c] == tok[c - w], tok[c] == tok[c - 1]
            n += 1
            above += a
            left += l
            either += a or l
            if not a:
                above_missed += 1
                left_where_above_missed += l
    if n == 0:
        sys.exit("no cells: give statistics files of whole pictures")
    print(f"cells {n} in {len(files)} pictures")
    print(f"the code above        {above / n:.3f}")
    print(f"the code on the left  {left / n:.3f}")
    print(f"left where above missed {left_where_above_missed / max(above_missed, 1):.3f}")
    print(f"either                {either / n:.3f}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    rates(sys.argv[1:])
