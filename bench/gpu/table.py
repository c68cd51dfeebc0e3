#!/usr/bin/env python3
"""The short table at the end of bench/gpu/run.sh: token identity on the device, the forward cost
curve of the shipped model and of the large random one, every method's tau and speed-up.
Usage: bench/gpu/table.py OUTDIR BIG (reads OUTDIR/id/*.json and OUTDIR/bench-*.json)."""
import glob
import json
import os
import sys

out, big = sys.argv[1], sys.argv[2]


def tokens(path):
    with open(path) as f:
        return json.load(f)["tokens"]


print("## Identity with AR on the device (same seed)\n")
print("| dtype | T | method | tokens equal AR |")
print("|---|---|---|---|")
for ar in sorted(glob.glob(os.path.join(out, "id", "ar-*.json"))):
    tag = os.path.basename(ar)[len("ar-"):-len(".json")]  # fp32-t0
    dtype, t = tag.split("-")
    want = tokens(ar)
    for path in sorted(glob.glob(os.path.join(out, "id", "*-" + tag + ".json"))):
        method = os.path.basename(path)[: -len("-" + tag + ".json")]
        if method == "ar":
            continue
        got = tokens(path)
        same = sum(a == b for a, b in zip(got, want))
        verdict = "yes" if got == want else f"NO ({same} of {len(want)} cells)"
        print(f"| {dtype} | {t[1:]} | {method} | {verdict} |")

for name in ("emoji", "emoji-host", big):
    path = os.path.join(out, f"bench-{name}.json")
    if not os.path.exists(path):
        continue
    with open(path) as f:
        b = json.load(f)
    blocks = b.get("forward_by_block", [])
    if blocks:
        one = blocks[0]["ms"]
        graph = [r.get("graph_ms") for r in blocks]
        g1 = graph[0]
        print(f"\n## Forward cost, {name} (eager, fixed shapes, CUDA graph replay)\n")
        print("| q | eager ms | x q=1 | fixed ms | graph ms | graph x q=1 graph |")
        print("|---|---|---|---|---|---|")
        for r, g in zip(blocks, graph):
            gs = f"{g:.3f} | {g / g1:.2f}" if g is not None and g1 else "- | -"
            print(f"| {r['q']} | {r['ms']:.3f} | {r['ms'] / one:.2f} | {r.get('fixed_ms', 0):.3f} | {gs} |")
    step = "host step" if name.endswith("-host") else "device step where covered"
    print(f"\n### Methods, {name} ({step})\n")
    print("| method | tau | drafted / step | tokens / s | speed-up vs AR |")
    print("|---|---|---|---|---|")
    for m, s in b["summary"].items():
        print(f"| {m} | {s['tau']:.2f} | {s['drafted_per_step']:.1f} | {s['tokens_per_s']:.0f} "
              f"| {s['speedup_vs_ar']:.2f} |")
