#!/usr/bin/env python3
"""By-hand parity of tests/mar/reference.py (and so of the C++ runtime, which test_mar checks
against it) with MAR's own code (issue "MAR checkpoints"); not part of the suite, because it needs
a fetched copy of LTH14/mar.

It imports MAR's models/ and diffusion/ from MAR_DIR (never copied into the project), with
stand-ins for what Debian lacks: timm's ViT Block / Attention / Mlp written from their definitions
with timm's parameter names, and inert scipy.stats / tqdm (used only for training's mask ratio and
a progress bar). It loads the reference's checkpoint-last.pth (model_ema) into MAR's own MAR class,
runs MAR's own sample_tokens with the reference's orders and noises injected (sample_orders,
DiffLoss.sample's torch.randn and the per-step torch.randn_like), and MAR's own LDM Decoder on
the reference's VAE tokens; it prints the largest differences from reference.safetensors.

    git -C MIRROR archive HEAD models diffusion | tar -x -C MAR_DIR
    python3 tests/mar/reference.py --out FIX
    python3 tests/mar/against_mar.py --mar MAR_DIR --fixture FIX
"""
import argparse
import json
import math
import struct
import sys
import types
from functools import partial
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn


def stand_ins():
    """timm's Block (pre-norm attention and MLP, qkv with bias, exact GELU), scipy, tqdm."""
    class Mlp(nn.Module):
        def __init__(self, dim, hidden):
            super().__init__()
            self.fc1, self.act, self.fc2 = nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim)

        def forward(self, x):
            return self.fc2(self.act(self.fc1(x)))

    class Attention(nn.Module):
        def __init__(self, dim, num_heads, qkv_bias):
            super().__init__()
            self.num_heads, self.scale = num_heads, (dim // num_heads) ** -0.5
            self.qkv, self.proj = nn.Linear(dim, dim * 3, bias=qkv_bias), nn.Linear(dim, dim)

        def forward(self, x):
            b, n, c = x.shape
            q, k, v = self.qkv(x).reshape(b, n, 3, self.num_heads, c // self.num_heads).permute(2, 0, 3, 1, 4)
            a = ((q * self.scale) @ k.transpose(-2, -1)).softmax(dim=-1)
            return self.proj((a @ v).transpose(1, 2).reshape(b, n, c))

    class Block(nn.Module):
        def __init__(self, dim, num_heads, mlp_ratio=4.0, qkv_bias=False, norm_layer=nn.LayerNorm,
                     proj_drop=0.0, attn_drop=0.0, **_):
            super().__init__()
            self.norm1, self.attn = norm_layer(dim), Attention(dim, num_heads, qkv_bias)
            self.norm2, self.mlp = norm_layer(dim), Mlp(dim, int(dim * mlp_ratio))

        def forward(self, x):
            x = x + self.attn(self.norm1(x))
            return x + self.mlp(self.norm2(x))

    vt = types.ModuleType("timm.models.vision_transformer")
    vt.Block = Block
    for name in ("timm", "timm.models"):
        sys.modules[name] = types.ModuleType(name)
    sys.modules["timm.models.vision_transformer"] = vt
    scipy, st = types.ModuleType("scipy"), types.ModuleType("scipy.stats")
    st.truncnorm = lambda *a, **k: None
    scipy.stats = st
    sys.modules.update({"scipy": scipy, "scipy.stats": st})
    tq = types.ModuleType("tqdm")
    tq.tqdm = lambda it, **_: it
    sys.modules["tqdm"] = tq
    torch.Tensor.cuda = lambda self, *a, **k: self  # MAR's sampler moves everything to CUDA


def read_safetensors(path):
    data = Path(path).read_bytes()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    kinds = {"F32": torch.float32, "I64": torch.int64, "U8": torch.uint8}
    out = {}
    for name, h in header.items():
        if name == "__metadata__":
            continue
        a, b = h["data_offsets"]
        t = torch.frombuffer(bytearray(data[8 + n + a:8 + n + b]), dtype=kinds[h["dtype"]])
        out[name] = t.reshape(h["shape"])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mar", required=True, help="a folder holding MAR's models/ and diffusion/")
    ap.add_argument("--fixture", required=True, help="tests/mar/reference.py --out")
    a = ap.parse_args()
    stand_ins()
    sys.path.insert(0, a.mar)
    from models import mar as mar_module  # noqa: E402  (MAR's own code)
    from models.vae import Decoder  # noqa: E402
    fix = Path(a.fixture)
    meta = json.loads((fix / "meta.json").read_text())
    c = meta["config"]
    ref = read_safetensors(fix / "reference.safetensors")
    torch.set_num_threads(1)
    model = mar_module.MAR(
        img_size=c["grid"] * 16, vae_stride=16, patch_size=1, encoder_embed_dim=c["encoder_dim"],
        encoder_depth=c["encoder_depth"], encoder_num_heads=c["encoder_heads"],
        decoder_embed_dim=c["decoder_dim"], decoder_depth=c["decoder_depth"],
        decoder_num_heads=c["decoder_heads"], mlp_ratio=4, norm_layer=partial(nn.LayerNorm, eps=1e-6),
        vae_embed_dim=c["token_dim"], buffer_size=c["buffer_size"], class_num=c["num_classes"],
        diffloss_d=c["head_blocks"], diffloss_w=c["head_width"],
        num_sampling_steps=str(c["sample_steps"])).eval()
    ckpt = torch.load(fix / "checkpoint-last.pth", map_location="cpu")
    model.load_state_dict(ckpt["model_ema"], strict=True)

    # The reference's randomness, handed to MAR's own sampler in the order it asks for it.
    orders, x_T, noise = ref["orders"], ref["x_T"], ref["noise"]
    model.sample_orders = lambda bsz: orders.clone()
    state = {}
    real_sample = model.diffloss.sample

    def sample(z, temperature=1.0, cfg=1.0):
        rows = state["rows"]
        steps = iter(noise[rows].unbind(1))
        real_randn, real_randn_like = torch.randn, torch.randn_like
        torch.randn = lambda *shape, **k: x_T[rows].clone()
        torch.randn_like = lambda x, **k: torch.cat([next(steps)] * (x.shape[0] // len(rows[0])))
        try:
            return real_sample(z, temperature, cfg)
        finally:
            torch.randn, torch.randn_like = real_randn, real_randn_like
    model.diffloss.sample = sample

    # Which rows MAR predicts at each step: recomputed as its sample_tokens does, so x_T and the
    # noises can be picked by position.
    real_xor = torch.logical_xor

    def xor(a_, b_):
        out = real_xor(a_, b_)
        state["rows"] = out[: orders.shape[0]].nonzero(as_tuple=True)
        return out
    torch.logical_xor = xor
    real_forward = model.forward_mae_decoder

    def decoder(x, mask):  # the last step predicts every masked token, without an xor
        state["rows"] = mask[: orders.shape[0]].bool().nonzero(as_tuple=True)
        return real_forward(x, mask)
    model.forward_mae_decoder = decoder
    with torch.no_grad():
        tokens = model.sample_tokens(bsz=orders.shape[0], num_iter=meta["num_iter"], cfg=meta["cfg"],
                                     cfg_schedule="linear", labels=ref["labels"],
                                     temperature=meta["temperature"])
    tokens = tokens.flatten(2).transpose(1, 2)  # unpatchify's [B, D, h, w] -> [B, N, D]
    sampled = ref["sampled"]
    print("generation: largest difference %.3g of the tokens' size %.3g" % (
        (tokens - sampled).abs().max().item() / sampled.abs().max().item(), sampled.abs().max().item()))

    vae = torch.load(fix / "kl16.ckpt", map_location="cpu")["model"]
    dec = Decoder(ch=vae["decoder.conv_out.weight"].shape[1], ch_mult=(1, 1, 2, 2, 4), z_channels=16)
    dec.load_state_dict({k[len("decoder."):]: v for k, v in vae.items() if k.startswith("decoder.")})
    pq = nn.Conv2d(16, 16, 1)
    pq.load_state_dict({"weight": vae["post_quant_conv.weight"], "bias": vae["post_quant_conv.bias"]})
    g = c["grid"]
    z = (ref["vae_tokens"] / 0.2325).reshape(-1, g, g, 16).permute(0, 3, 1, 2)
    with torch.no_grad():
        pixels = dec(pq(z))
    print("KL-16 decode: largest difference %.3g (pixels up to %.3g)" % (
        (pixels - ref["pixels"]).abs().max().item(), ref["pixels"].abs().max().item()))


if __name__ == "__main__":
    main()
