#!/usr/bin/env python3
"""Reads the --stats files of one ADT-Tree run and one AR run of the same picture and prints
(1) the median verification time by rows verified, against AR's median step, and (2) the tokens
committed and time taken by steps that called the draft head against steps that drafted only free
candidates. Used by docs/bench/bench-adt-cost.sh; the figures are quoted in docs/PERFORMANCE.md.
  docs/bench/step-traces.py ADT_STATS.json AR_STATS.json"""
import json
import statistics
import sys

adt = json.load(open(sys.argv[1]))["steps"]
ar = json.load(open(sys.argv[2]))["steps"]
ar_step = statistics.median(s["time_ms"]["verify"] for s in ar)
print(f"AR median verification {ar_step:.3f} ms")
rows = {}
for s in adt:
    rows.setdefault(s["drafted"] + 1, []).append(s["time_ms"]["verify"])
for r in sorted(rows):
    m = statistics.median(rows[r])
    print(f"{r:3d} rows: {len(rows[r]):4d} steps, median {m:.3f} ms = {m / ar_step:.2f}x AR's")
for kind, pick in (("free chain only", lambda s: s.get("grid", 0) == s["drafted"]),
                   ("head called", lambda s: s.get("grid", 0) != s["drafted"])):
    steps = [s for s in adt if pick(s)]
    if not steps:
        continue
    ms = statistics.mean(sum(s["time_ms"].values()) for s in steps)
    tok = statistics.mean(s["committed"] for s in steps)
    print(f"{kind}: {len(steps)} steps, {tok:.2f} tokens in {ms:.2f} ms a step")
