#!/usr/bin/env python3
"""Independent LlamaGen reference and fixture maker for the C++ parity test.

Why: the C++ GPT, VQ decoder and EAGLE head must match LlamaGen in every structural detail (2-D
RoPE on adjacent pairs, zeroed condition q/k, left-shifted captions, CFG, KV cache). This file
computes the same things a second time, written only from docs/design/LLAMAGEN.md and
SPEC_DECODING.md 2 (not from core/model), so a shared misreading of the formulas is the only way
both can agree on a wrong answer. Everything runs in fp32 on one CPU thread; a seed gives the same
bytes on every run.

How:
  reference.py --out DIR --kind c2i|t2i [--seed 0]
      A small random model in LlamaGen's checkpoint layout plus reference outputs: DIR/gpt.pt,
      DIR/vq.pt, for t2i DIR/drafter.pt (LANTERN names) and DIR/prompt.safetensors,
      DIR/reference.safetensors and DIR/meta.json. Convert it with
          tools/convert_llamagen.py --gpt DIR/gpt.pt --vq DIR/vq.pt [--drafter DIR/drafter.pt]
              --n-head 4 --grid 4 --out MODEL        (meta.json "convert" lists these arguments)
      then load MODEL in C++ and compare with reference.safetensors.
  reference.py --out DIR --shapes B|L|XL
      Random weights in the exact shapes of the released c2i models (B, L: 256 px; XL: 384 px), no
      outputs, for the converter round trip: DIR/gpt.pt and DIR/meta.json.

reference.safetensors (N = 16 image tokens, V = 256):
  tokens [N] I64 teacher-forcing sequence; class_id [1] I64 (c2i);
  logits, logits_null [N, V] F32: teacher-forced logits at positions C-1 .. C+N-2 with the
      condition / the null class or caption, no CFG;
  greedy [N] I64 and greedy_logits [N, V] F32: KV-cached greedy decoding with CFG 4.0, the mixed
      logits u + 4 (c - u) that chose each token;
  pixels [3, 64, 64] F32: VQ decode of tokens, not clamped;
  t2i: drafter_feats [8, 64] F32, drafter_tokens [8] I64, drafter_positions [8] I64 (C + n for
      image tokens n = 1 .. 8), drafter_logits [8, V] F32 of the EAGLE-1 head.
prompt.safetensors (t2i): caption_embedding [120, 2048] F32, caption_mask [120] I64, right-padded
  after 9 tokens with garbage in the padded rows (they must be ignored).

Small model: dim 64, 2 layers, 4 heads (head_dim 16), vocab 256, grid 4x4, c2i 10 classes, t2i
cap_dim 2048 and 120 caption slots; VQ codebook 256 x 8, ch 32 x (1, 1, 2, 2, 4), z 64, 2 res
blocks, so the 4x4 grid decodes to 64x64 pixels. Matrices are drawn with std 1/sqrt(fan_in), not
LlamaGen's 0.02: at dim 64 that would leave attention nearly uniform and hide RoPE or mask errors
below the test tolerance. Embeddings have std 1, the output head 0.25, norm weights
1 + 0.1 N(0, 1). fp32 here differs from the same model in fp64 by about 2e-5 in any logit and 1e-5
in any pixel; the mistakes this fixture is built to catch move them by more than 1.
"""
import argparse
import json
import math
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from convert_llamagen import write_safetensors  # noqa: E402  (file IO only, no model code)

SMALL = {"dim": 64, "n_layer": 2, "n_head": 4, "vocab_size": 256, "grid": 4, "num_classes": 10,
         "cap_dim": 2048, "cond_len": 120, "norm_eps": 1e-5, "rope_base": 10000.0}
SMALL_VQ = {"codebook_size": 256, "codebook_dim": 8, "ch": 32, "ch_mult": [1, 1, 2, 2, 4],
            "z_channels": 64, "num_res_blocks": 2, "norm_groups": 32, "norm_eps": 1e-6}
RELEASED = {"B": (12, 12, 768, 256), "L": (24, 16, 1024, 256), "XL": (36, 20, 1280, 384)}
CFG_SCALE = 4.0
CAPTION_VALID = 9  # caption tokens before the right padding
DRAFTER_ROWS = 8
DRAFTER_EPS = 1e-6


# ---- model layout --------------------------------------------------------------------------------

def ffn_hidden(dim):
    """int(8 * dim / 3) rounded up to a multiple of 256."""
    return 256 * -(-(8 * dim // 3) // 256)


def gpt_layout(c, kind):
    """LlamaGen GPT tensor names -> (shape, init), init one of norm, embed, head, or a fan-in."""
    d, hid = c["dim"], ffn_hidden(c["dim"])
    s = {}
    if kind == "c2i":
        s["cls_embedding.embedding_table.weight"] = ((c["num_classes"] + 1, d), "embed")
    else:
        s["cls_embedding.cap_proj.fc1.weight"] = ((d, c["cap_dim"]), c["cap_dim"])
        s["cls_embedding.cap_proj.fc2.weight"] = ((d, d), d)
        s["cls_embedding.uncond_embedding"] = ((c["cond_len"], c["cap_dim"]), "embed")
    s["tok_embeddings.weight"] = ((c["vocab_size"], d), "embed")
    for i in range(c["n_layer"]):
        p = f"layers.{i}."
        s[p + "attention.wqkv.weight"] = ((3 * d, d), d)
        s[p + "attention.wo.weight"] = ((d, d), d)
        s[p + "feed_forward.w1.weight"] = ((hid, d), d)
        s[p + "feed_forward.w2.weight"] = ((d, hid), hid)
        s[p + "feed_forward.w3.weight"] = ((hid, d), d)
        s[p + "attention_norm.weight"] = ((d,), "norm")
        s[p + "ffn_norm.weight"] = ((d,), "norm")
    s["norm.weight"] = ((d,), "norm")
    s["output.weight"] = ((c["vocab_size"], d), "head")
    return s


def vq_layout(c):
    """LlamaGen VQ tensor names (encoder and decoder) -> (shape, init), per LLAMAGEN.md."""
    s = {}

    def conv(p, cin, cout, k):
        s[p + ".weight"] = ((cout, cin, k, k), cin * k * k)
        s[p + ".bias"] = ((cout,), "bias")

    def norm(p, ch):
        s[p + ".weight"], s[p + ".bias"] = ((ch,), "norm"), ((ch,), "bias")

    def res(p, cin, cout):
        norm(p + ".norm1", cin)
        conv(p + ".conv1", cin, cout, 3)
        norm(p + ".norm2", cout)
        conv(p + ".conv2", cout, cout, 3)
        if cin != cout:
            conv(p + ".nin_shortcut", cin, cout, 1)

    def attn(p, ch):
        norm(p + ".norm", ch)
        for n in ("q", "k", "v", "proj_out"):
            conv(f"{p}.{n}", ch, ch, 1)

    def mid(p, ch):
        res(p + ".0", ch, ch)
        attn(p + ".1", ch)
        res(p + ".2", ch, ch)

    widths = [c["ch"] * m for m in c["ch_mult"]]
    levels, nrb = len(widths), c["num_res_blocks"]
    conv("encoder.conv_in", 3, c["ch"], 3)
    cin = c["ch"]
    for lv, cout in enumerate(widths):
        for j in range(nrb):
            res(f"encoder.conv_blocks.{lv}.res.{j}", cin, cout)
            cin = cout
            if lv == levels - 1:  # attention only at the lowest resolution
                attn(f"encoder.conv_blocks.{lv}.attn.{j}", cout)
        if lv != levels - 1:
            conv(f"encoder.conv_blocks.{lv}.downsample.conv", cout, cout, 3)
    mid("encoder.mid", cin)
    norm("encoder.norm_out", cin)
    conv("encoder.conv_out", cin, c["z_channels"], 3)
    conv("quant_conv", c["z_channels"], c["codebook_dim"], 1)
    s["quantize.embedding.weight"] = ((c["codebook_size"], c["codebook_dim"]), "embed")
    conv("post_quant_conv", c["codebook_dim"], c["z_channels"], 1)
    conv("decoder.conv_in", c["z_channels"], cin, 3)
    mid("decoder.mid", cin)
    for lv, cout in enumerate(reversed(widths)):
        for j in range(nrb + 1):
            res(f"decoder.conv_blocks.{lv}.res.{j}", cin, cout)
            cin = cout
            if lv == 0:  # the decoder's first level is the lowest resolution
                attn(f"decoder.conv_blocks.{lv}.attn.{j}", cout)
        if lv != levels - 1:
            conv(f"decoder.conv_blocks.{lv}.upsample.conv", cout, cout, 3)
    norm("decoder.norm_out", cin)
    conv("decoder.conv_out", cin, 3, 3)
    return s


def lantern_drafter_layout(c):
    """LANTERN's EAGLE-1 head, Hugging Face names (fc with bias, one layer without input norm)."""
    d, hid = c["dim"], ffn_hidden(c["dim"])
    s = {"embed_tokens.weight": ((c["vocab_size"], d), "embed"),
         "fc.weight": ((d, 2 * d), "fc"), "fc.bias": ((d,), "fc_bias")}
    for n in "qkvo":
        s[f"layers.0.self_attn.{n}_proj.weight"] = ((d, d), "qk" if n in "qk" else d)
    s["layers.0.mlp.gate_proj.weight"] = ((hid, d), d)
    s["layers.0.mlp.up_proj.weight"] = ((hid, d), d)
    s["layers.0.mlp.down_proj.weight"] = ((d, hid), hid)
    s["layers.0.post_attention_layernorm.weight"] = ((d,), "norm")
    return s


# The drafter's fc output is kept small (RMS ~0.005) so that its RMSNorm eps (1e-6, LANTERN) shows
# in the logits: a port that used the target's 1e-5 fails the test (meta.json records by how much).
# Its q/k projections are scaled up to match, so that the attention pattern (and the 2-D RoPE in
# it) still matters at that input size.
SCALES = {"embed": 1.0, "head": 0.25, "bias": 0.05, "fc": 0.005 / math.sqrt(128), "fc_bias": 0.005,
          "qk": 20.0}


def init(layout, gen):
    out = {}
    for name, (shape, kind) in layout.items():
        if kind == "norm":
            out[name] = 1 + 0.1 * torch.randn(shape, generator=gen)
        elif isinstance(kind, int):
            out[name] = torch.randn(shape, generator=gen) / math.sqrt(kind)
        else:
            out[name] = SCALES[kind] * torch.randn(shape, generator=gen)
    return out


# ---- GPT math ------------------------------------------------------------------------------------

def rms_norm(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def rope_angles(c, positions, cond_len):
    """cos, sin [T, head_dim/2] of sequence positions: zero for condition slots, else the first
    head_dim/4 pairs turn with the grid row of the image token and the rest with its column."""
    hd = c["dim"] // c["n_head"]
    i = torch.arange(hd // 4, dtype=torch.float32)
    freq = torch.pow(torch.tensor(c["rope_base"], dtype=torch.float32), -2 * i / (hd // 2))
    cos = torch.zeros(len(positions), hd // 2)
    sin = torch.zeros(len(positions), hd // 2)
    for t, p in enumerate(positions):
        if p >= cond_len:
            row, col = divmod(p - cond_len, c["grid"])
            ang = torch.cat([row * freq, col * freq])
            cos[t], sin[t] = torch.cos(ang), torch.sin(ang)
    return cos, sin


def rotate(x, cos, sin):
    """Rotates adjacent pairs (2j, 2j+1) of x [B, T, H, hd] as complex numbers."""
    xr = x.float().reshape(*x.shape[:-1], -1, 2)
    a, b = xr[..., 0], xr[..., 1]
    cos, sin = cos[None, :, None, :], sin[None, :, None, :]
    return torch.stack([a * cos - b * sin, a * sin + b * cos], -1).flatten(-2).to(x.dtype)


def attention(x, wqkv, wo, n_head, rope, allowed, cache=None):
    """Multi-head attention; keys are rotated before they enter `cache` (a dict with k, v)."""
    B, T, D = x.shape
    hd = D // n_head
    q, k, v = (x @ wqkv.t()).split(D, -1)
    q = rotate(q.view(B, T, n_head, hd), *rope)
    k = rotate(k.view(B, T, n_head, hd), *rope)
    v = v.view(B, T, n_head, hd)
    if cache is not None:
        if cache:
            k, v = torch.cat([cache["k"], k], 1), torch.cat([cache["v"], v], 1)
        cache["k"], cache["v"] = k, v
    scores = torch.einsum("bthd,bshd->bhts", q, k) / math.sqrt(hd)
    scores = scores.masked_fill(~allowed[:, None], float("-inf"))
    out = torch.einsum("bhts,bshd->bthd", scores.softmax(-1), v).reshape(B, T, D)
    return out @ wo.t()


def swiglu(x, w1, w2, w3):
    return (F.silu(x @ w1.t()) * (x @ w3.t())) @ w2.t()


def visibility(positions, key_ok):
    """allowed [B, T, S]: causal, padded condition keys hidden, then the diagonal forced visible."""
    S = key_ok.shape[1]
    q = torch.tensor(positions)[:, None]
    k = torch.arange(S)[None, :]
    return (k <= q)[None] & (key_ok[:, None, :] | (k == q)[None])


def gpt_forward(w, c, x, positions, key_ok, caches=None):
    """x [B, T, dim] input embeddings at `positions` -> fp32 logits [B, T, vocab]."""
    rope = rope_angles(c, positions, c["cond_tokens"])
    allowed = visibility(positions, key_ok[:, :positions[-1] + 1])
    h = x
    for i in range(c["n_layer"]):
        p = f"layers.{i}."
        h = h + attention(rms_norm(h, w[p + "attention_norm.weight"], c["norm_eps"]),
                          w[p + "attention.wqkv.weight"], w[p + "attention.wo.weight"],
                          c["n_head"], rope, allowed, caches[i] if caches else None)
        h = h + swiglu(rms_norm(h, w[p + "ffn_norm.weight"], c["norm_eps"]),
                       w[p + "feed_forward.w1.weight"], w[p + "feed_forward.w2.weight"],
                       w[p + "feed_forward.w3.weight"])
    return (rms_norm(h, w["norm.weight"], c["norm_eps"]) @ w["output.weight"].t()).float()


def condition_embeddings(w, kind, cond):
    """[B, C, dim]: class rows of the table, or cap_proj = fc2(gelu_tanh(fc1(e))) of captions."""
    if kind == "c2i":
        return w["cls_embedding.embedding_table.weight"][cond][:, None, :]
    h = F.gelu(cond @ w["cls_embedding.cap_proj.fc1.weight"].t(), approximate="tanh")
    return h @ w["cls_embedding.cap_proj.fc2.weight"].t()


def left_shift(embedding, mask):
    """LlamaGen's left padding of a right-padded T5 output: valid rows moved to the end in order,
    padded slots zeroed, the mask moved with them."""
    n = int(mask.sum())
    if not torch.equal(mask, (torch.arange(len(mask)) < n).long()):
        raise ValueError("the caption mask must be right-padded: ones, then zeros")
    shifted, new_mask = torch.zeros_like(embedding), torch.zeros_like(mask)
    shifted[len(mask) - n:] = embedding[:n]
    new_mask[len(mask) - n:] = 1
    return shifted, new_mask.bool()


def teacher_forced(w, c, kind, cond, key_ok, tokens):
    """Logits [N, vocab] at positions C-1 .. C+N-2, no cache (cond: one condition, batch 1)."""
    tok = w["tok_embeddings.weight"][tokens[:-1]][None]
    x = torch.cat([condition_embeddings(w, kind, cond), tok], 1)
    positions = list(range(x.shape[1]))
    logits = gpt_forward(w, c, x, positions, full_key_ok(key_ok, c))
    return logits[0, c["cond_tokens"] - 1:]


def full_key_ok(cond_ok, c):
    """Key visibility over the whole sequence: the condition mask, then every image token."""
    return torch.cat([cond_ok, torch.ones(cond_ok.shape[0], c["grid"] ** 2, dtype=torch.bool)], 1)


def greedy_cfg(w, c, kind, cond_pair, cond_ok):
    """KV-cached greedy decoding of batch [cond; null], one token per step, logits u + s (c - u)."""
    C, N = c["cond_tokens"], c["grid"] ** 2
    key_ok = full_key_ok(cond_ok, c)
    caches = [{} for _ in range(c["n_layer"])]
    logits = gpt_forward(w, c, condition_embeddings(w, kind, cond_pair), list(range(C)), key_ok,
                         caches)
    tokens, mixed_all, margins = [], [], []
    for n in range(N):
        cond, null = logits[0, -1], logits[1, -1]
        mixed = null + CFG_SCALE * (cond - null)
        top2 = mixed.topk(2).values
        tokens.append(int(mixed.argmax()))
        mixed_all.append(mixed)
        margins.append(float(top2[0] - top2[1]))
        if n + 1 < N:
            x = w["tok_embeddings.weight"][torch.tensor([tokens[-1]] * 2)][:, None]
            logits = gpt_forward(w, c, x, [C + n], key_ok, caches)
    return torch.tensor(tokens), torch.stack(mixed_all), min(margins)


def drafter_logits(w, dw, c, feats, tokens, positions, eps):
    """EAGLE-1 head: h = fc([embed(t), f]) + b; one layer without input norm, SwiGLU with
    post_attention_layernorm; logits = the target's output head on h (no final norm)."""
    h = torch.cat([w["tok_embeddings.weight"][tokens], feats], -1) @ dw["fc.weight"].t() + \
        dw["fc.bias"]
    h = h[None]
    wqkv = torch.cat([dw[f"layers.0.self_attn.{n}_proj.weight"] for n in "qkv"], 0)
    rope = rope_angles(c, positions, c["cond_tokens"])
    T = len(positions)
    allowed = torch.ones(T, T, dtype=torch.bool).tril()[None]
    h = h + attention(h, wqkv, dw["layers.0.self_attn.o_proj.weight"], c["n_head"], rope, allowed)
    h = h + swiglu(rms_norm(h, dw["layers.0.post_attention_layernorm.weight"], eps),
                   dw["layers.0.mlp.gate_proj.weight"], dw["layers.0.mlp.down_proj.weight"],
                   dw["layers.0.mlp.up_proj.weight"])
    return (h[0] @ w["output.weight"].t()).float()


# ---- VQ decoder ----------------------------------------------------------------------------------

def vq_decode(w, c, tokens, grid):
    """Indices [grid*grid] -> image [3, H, W] in about [-1, 1], not clamped."""
    eps, groups = c["norm_eps"], c["norm_groups"]

    def conv(p, x, stride=1):
        k = w[p + ".weight"].shape[-1]
        return F.conv2d(x, w[p + ".weight"], w[p + ".bias"], stride, k // 2)

    def norm(p, x):
        return F.group_norm(x, groups, w[p + ".weight"], w[p + ".bias"], eps)

    def res(p, x):
        h = conv(p + ".conv1", F.silu(norm(p + ".norm1", x)))
        h = conv(p + ".conv2", F.silu(norm(p + ".norm2", h)))
        return (conv(p + ".nin_shortcut", x) if p + ".nin_shortcut.weight" in w else x) + h

    def attn(p, x):
        B, C, H, W = x.shape
        h = norm(p + ".norm", x)
        q, k, v = (conv(f"{p}.{n}", h).reshape(B, C, H * W) for n in "qkv")
        a = (q.transpose(1, 2) @ k / math.sqrt(C)).softmax(-1)  # [B, query, key]
        return x + conv(p + ".proj_out", (v @ a.transpose(1, 2)).reshape(B, C, H, W))

    codes = F.normalize(w["quantize.embedding.weight"], dim=1, eps=1e-12)[tokens]
    h = conv("post_quant_conv", codes.view(1, grid, grid, -1).permute(0, 3, 1, 2))
    h = conv("decoder.conv_in", h)
    h = res("decoder.mid.2", attn("decoder.mid.1", res("decoder.mid.0", h)))
    levels = len(c["ch_mult"])
    for lv in range(levels):
        p = f"decoder.conv_blocks.{lv}"
        for j in range(c["num_res_blocks"] + 1):
            h = res(f"{p}.res.{j}", h)
            if lv == 0:
                h = attn(f"{p}.attn.{j}", h)
        if lv != levels - 1:
            h = conv(p + ".upsample.conv", F.interpolate(h, scale_factor=2.0, mode="nearest"))
    return conv("decoder.conv_out", F.silu(norm("decoder.norm_out", h)))[0]


# ---- fixtures ------------------------------------------------------------------------------------

def num_params(sd):
    return sum(t.numel() for t in sd.values())


def stray_buffers(c):
    """Non-weight buffers a released checkpoint may carry; the converter must drop them."""
    hd = c["dim"] // c["n_head"]
    seq = c["cond_tokens"] + c["grid"] ** 2
    return {"freqs_cis": torch.zeros(seq, hd // 2, 2),
            "causal_mask": torch.ones(seq, seq, dtype=torch.bool).tril(),
            "layers.0.attention.kv_cache.k_cache": torch.zeros(2, c["n_head"], seq, hd)}


def gpt_config_json(c, kind):
    """The model.json "gpt" section the converted directory should carry."""
    j = {k: c[k] for k in ("dim", "n_layer", "n_head", "vocab_size", "norm_eps", "rope_base")}
    j.update(grid=[c["grid"], c["grid"]], multiple_of=256, ffn_hidden=ffn_hidden(c["dim"]))
    if kind == "c2i":
        j.update(cond="class", num_classes=c["num_classes"])
    else:
        j.update(cond="caption", cap_dim=c["cap_dim"], cond_len=c["cond_len"], num_words=0)
    return j


def make_small(out, kind, seed):
    gen = torch.Generator().manual_seed(seed)
    c = dict(SMALL, cond_tokens=1 if kind == "c2i" else SMALL["cond_len"])
    N, V = c["grid"] ** 2, c["vocab_size"]
    w = init(gpt_layout(c, kind), gen)
    vq = init(vq_layout(SMALL_VQ), gen)
    tokens = torch.randint(0, V, (N,), generator=gen)
    ref = {"tokens": tokens}
    meta = {"kind": kind, "seed": seed, "gpt": gpt_config_json(c, kind), "vq": SMALL_VQ,
            "cfg_scale": CFG_SCALE, "image_tokens": N, "cond_tokens": c["cond_tokens"],
            "convert": ["--gpt", "gpt.pt", "--vq", "vq.pt", "--n-head", str(c["n_head"]),
                        "--grid", str(c["grid"])]}

    if kind == "c2i":
        class_id = int(torch.randint(0, c["num_classes"], (1,), generator=gen))
        ref["class_id"] = torch.tensor([class_id])
        cond, null = torch.tensor([class_id]), torch.tensor([c["num_classes"]])
        cond_ok = torch.ones(1, 1, dtype=torch.bool)
        meta["class_id"] = class_id
    else:
        C, cap = c["cond_len"], c["cap_dim"]
        caption = 5.0 + 10.0 * torch.randn(C, cap, generator=gen)  # garbage in the padded rows
        caption[:CAPTION_VALID] = torch.randn(CAPTION_VALID, cap, generator=gen)
        mask = (torch.arange(C) < CAPTION_VALID).long()
        write_safetensors(out / "prompt.safetensors",
                          {"caption_embedding": caption, "caption_mask": mask},
                          {"prompt": "reference.py random caption", "encoder": "random"})
        shifted, ok = left_shift(caption, mask)
        cond, null = shifted[None], w["cls_embedding.uncond_embedding"][None]
        cond_ok = ok[None]
        meta["caption_valid_tokens"] = CAPTION_VALID

    ref["logits"] = teacher_forced(w, c, kind, cond, cond_ok, tokens)
    ref["logits_null"] = teacher_forced(w, c, kind, null, cond_ok, tokens)
    pair_ok = cond_ok.expand(2, -1)
    ref["greedy"], ref["greedy_logits"], margin = greedy_cfg(w, c, kind, torch.cat([cond, null]),
                                                             pair_ok)
    ref["pixels"] = vq_decode(vq, SMALL_VQ, tokens, c["grid"])

    # Self-check: the cached CFG logits equal uncached teacher forcing of the greedy sequence.
    tf_c = teacher_forced(w, c, kind, cond, cond_ok, ref["greedy"])
    tf_u = teacher_forced(w, c, kind, null, cond_ok, ref["greedy"])
    cache_diff = float((tf_u + CFG_SCALE * (tf_c - tf_u) - ref["greedy_logits"]).abs().max())
    if cache_diff > 1e-3:
        raise AssertionError(f"KV-cached and uncached logits differ by {cache_diff}")
    meta["self_check"] = {"kv_cache_vs_full_max_abs_diff": cache_diff,
                          "greedy_min_top2_margin": margin,
                          "logits_max_abs": float(ref["logits"].abs().max()),
                          "pixels_min": float(ref["pixels"].min()),
                          "pixels_max": float(ref["pixels"].max())}

    vq_ckpt = dict(vq, **{"quantize.codebook_used": torch.zeros(SMALL_VQ["codebook_size"])})
    torch.save({"model": vq_ckpt}, out / "vq.pt")
    meta["num_params"] = {"gpt": num_params(w), "vq": num_params(vq)}

    if kind == "t2i":
        dw = init(lantern_drafter_layout(c), gen)
        dw["embed_tokens.weight"] = w["tok_embeddings.weight"].clone()
        feats = torch.randn(DRAFTER_ROWS, c["dim"], generator=gen)
        dtok = torch.randint(0, V, (DRAFTER_ROWS,), generator=gen)
        dpos = [c["cond_tokens"] + n for n in range(1, DRAFTER_ROWS + 1)]
        ref.update(drafter_feats=feats, drafter_tokens=dtok, drafter_positions=torch.tensor(dpos))
        ref["drafter_logits"] = drafter_logits(w, dw, c, feats, dtok, dpos, DRAFTER_EPS)
        wrong_eps = drafter_logits(w, dw, c, feats, dtok, dpos, c["norm_eps"])
        meta["drafter"] = {"kind": "eagle1", "layers": 1, "norm_eps": DRAFTER_EPS,
                           "source": "lantern-hf"}
        meta["self_check"]["drafter_logits_change_with_eps_1e-5"] = float(
            (wrong_eps - ref["drafter_logits"]).abs().max())
        torch.save(dw, out / "drafter.pt")
        meta["num_params"]["drafter"] = num_params(dw) - dw["embed_tokens.weight"].numel()
        meta["convert"] += ["--drafter", "drafter.pt"]

    torch.save({"model": dict(w, **stray_buffers(c)), "optimizer": None, "steps": 7,
                "args": argparse.Namespace(gpt_model="GPT-tiny")}, out / "gpt.pt")
    write_safetensors(out / "reference.safetensors", {k: v.contiguous() for k, v in ref.items()},
                      {"kind": kind, "seed": str(seed)})
    return meta


def make_released_shapes(out, size):
    n_layer, n_head, dim, px = RELEASED[size]
    c = {"dim": dim, "n_layer": n_layer, "n_head": n_head, "vocab_size": 16384, "grid": px // 16,
         "num_classes": 1000, "norm_eps": 1e-5, "rope_base": 10000.0}
    w = init(gpt_layout(c, "c2i"), torch.Generator().manual_seed(0))
    torch.save({"model": w}, out / "gpt.pt")
    name = f"c2i_{size}_{px}"
    return {"kind": "c2i", "shapes": size, "model": name, "gpt": gpt_config_json(c, "c2i"),
            "num_params": {"gpt": num_params(w)}, "convert": ["--gpt", "gpt.pt", "--model", name]}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="directory to write (created)")
    ap.add_argument("--kind", choices=("c2i", "t2i"), default="c2i",
                    help="class- or caption-conditioned small model (default c2i)")
    ap.add_argument("--seed", type=int, default=0, help="seed of every random draw (default 0)")
    ap.add_argument("--shapes", choices=sorted(RELEASED),
                    help="random weights in a released c2i model's shapes, no outputs")
    opts = ap.parse_args()
    if opts.shapes and opts.kind != "c2i":
        ap.error("--shapes makes c2i models only")
    torch.set_num_threads(1)
    out = Path(opts.out)
    out.mkdir(parents=True, exist_ok=True)
    meta = make_released_shapes(out, opts.shapes) if opts.shapes else \
        make_small(out, opts.kind, opts.seed)
    (out / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    print(f"wrote {out}: " + ", ".join(sorted(p.name for p in out.iterdir())))


if __name__ == "__main__":
    main()
