#!/usr/bin/env python3
"""Times MAR's own PyTorch code on this CPU (issue "MAR checkpoints": the product's AR against
MAR's code at equal settings); not part of the suite, because it needs a fetched copy of LTH14/mar.

It builds MAR's own MAR class at a released shape (B, L or H) with MAR's own initialisation (the
weights do not change the cost), and MAR's own KL-16 Decoder and post_quant_conv, with the same
stand-ins as tests/mar/against_mar.py (timm's ViT Block from its definition, inert scipy and
tqdm). It times sample_tokens for one picture (bsz 1, MAR's linear CFG schedule: both halves of the
batch every step) and the VAE decode, in fp32 as MAR's sampler runs on a CPU, or under
torch.autocast(cpu, bfloat16) with --bf16, and counts the multiply-adds each pass does:

    git -C MIRROR archive HEAD models diffusion | tar -x -C MAR_DIR
    python3 tests/mar/time_mar.py --mar MAR_DIR --shape B --num-iter 64 [--threads 2] [--bf16]

It prints one JSON object (seconds, multiply-adds, the settings).
"""
import argparse
import json
import math
import sys
import time
from functools import partial

import torch
import torch.nn as nn

sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
from against_mar import stand_ins  # noqa: E402

SHAPES = {  # models/mar.py mar_base / mar_large / mar_huge, main_mar.py's diffloss_d / diffloss_w
    "B": dict(dim=768, depth=12, heads=12, head_w=1024, head_d=6),
    "L": dict(dim=1024, depth=16, heads=16, head_w=1280, head_d=8),
    "H": dict(dim=1280, depth=20, heads=16, head_w=1536, head_d=12),
}


def multiply_adds(s, n, buffer, num_iter, steps, cfg_rows, token_dim=16):
    """Multiply-adds of one picture: every pass's encoder (buffer + known tokens) and decoder
    (buffer + all tokens) blocks, and the head's steps for every predicted token."""
    d, dh, w = s["dim"], 4 * s["dim"], s["head_w"]
    block = lambda rows: rows * (4 * d * d + 2 * d * dh) + 2 * rows * rows * d  # noqa: E731
    total, masked = 0, n
    for step in range(num_iter):
        keep = max(1, min(masked - 1, math.floor(n * math.cos(math.pi / 2 * (step + 1) / num_iter))))
        known = n - masked
        enc = s["depth"] * block(buffer + known) + n * token_dim * d
        dec = s["depth"] * block(buffer + n) + (buffer + known) * d * d
        total += cfg_rows * (enc + dec)
        masked = keep if step < num_iter - 1 else 0
    # per token and reverse step, as MAR's head runs it: the blocks (AdaLN 3w^2, MLP 2w^2), the input,
    # condition (decoder width) and time (256 frequencies, two layers) embeddings, the final layer
    per_token_step = (s["head_d"] * 5 * w * w + token_dim * w + d * w + 256 * w + w * w
                      + 2 * w * w + w * 2 * token_dim)
    return total, cfg_rows * n * steps * per_token_step


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mar", required=True, help="a folder holding MAR's models/ and diffusion/")
    ap.add_argument("--shape", default="B", choices=sorted(SHAPES))
    ap.add_argument("--num-iter", type=int, default=64)
    ap.add_argument("--steps", type=int, default=100, help="the head's reverse steps")
    ap.add_argument("--cfg", type=float, default=2.9)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--bf16", action="store_true", help="torch.autocast(cpu, bfloat16)")
    a = ap.parse_args()
    stand_ins()
    sys.path.insert(0, a.mar)
    from models import mar as mar_module  # noqa: E402  (MAR's own code)
    from models.vae import Decoder  # noqa: E402
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    s = SHAPES[a.shape]
    model = mar_module.MAR(
        img_size=256, vae_stride=16, patch_size=1, encoder_embed_dim=s["dim"], encoder_depth=s["depth"],
        encoder_num_heads=s["heads"], decoder_embed_dim=s["dim"], decoder_depth=s["depth"],
        decoder_num_heads=s["heads"], mlp_ratio=4, norm_layer=partial(nn.LayerNorm, eps=1e-6),
        vae_embed_dim=16, buffer_size=64, class_num=1000, diffloss_d=s["head_d"],
        diffloss_w=s["head_w"], num_sampling_steps=str(a.steps)).eval()
    dec, pq = Decoder(ch=128, ch_mult=(1, 1, 2, 2, 4), z_channels=16).eval(), nn.Conv2d(16, 16, 1)
    ctx = torch.autocast("cpu", dtype=torch.bfloat16) if a.bf16 else torch.no_grad()
    with torch.no_grad(), ctx:
        t0 = time.perf_counter()
        tokens = model.sample_tokens(bsz=1, num_iter=a.num_iter, cfg=a.cfg, cfg_schedule="linear",
                                     labels=torch.tensor([207]), temperature=1.0)
        t1 = time.perf_counter()
        pixels = dec(pq(tokens.float() / 0.2325))
        t2 = time.perf_counter()
    backbone, head = multiply_adds(s, 256, 64, a.num_iter, a.steps, 2 if a.cfg != 1.0 else 1)
    print(json.dumps({
        "shape": a.shape, "num_iter": a.num_iter, "steps": a.steps, "cfg": a.cfg,
        "threads": a.threads, "precision": "bf16 autocast" if a.bf16 else "fp32",
        "sample_tokens_s": round(t1 - t0, 2), "vae_decode_s": round(t2 - t1, 2),
        "picture_s": round(t2 - t0, 2), "pixels": list(pixels.shape),
        "backbone_gmacs": round(backbone / 1e9, 1), "head_gmacs": round(head / 1e9, 1)}))


if __name__ == "__main__":
    main()
