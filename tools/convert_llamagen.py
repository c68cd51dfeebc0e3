#!/usr/bin/env python3
"""Convert released LlamaGen checkpoints into an ADT-Tree Studio model directory.

Why: the app loads a model directory (model.json + safetensors, docs in ARCHITECTURE.md "Model
directory"), while LlamaGen releases PyTorch pickles (c2i_B_256.pt, vq_ds16_c2i.pt, ...) and LANTERN
releases its EAGLE drafters with Hugging Face names. This script checks every tensor against the
layout the C++ loader expects (core/model/llamagen/gpt.cpp gpt_param_specs, vq.cpp vq_param_specs,
drafter.cpp drafter_param_specs), infers the configuration from the shapes, and writes:

  DIR/gpt.safetensors      the transformer, LlamaGen tensor names
  DIR/vq.safetensors       the VQ tokenizer (with --vq; encoder kept when present)
  DIR/drafter.safetensors  the EAGLE-1 draft head (with --drafter), renamed to the app's names
  DIR/model.json           manifest: config, default sampling, licence, provenance (sha256 of
                           each whole source file)
  DIR/text.json            c2i only: the class names

How:
  convert_llamagen.py --gpt c2i_B_256.pt --vq vq_ds16_c2i.pt --out models/c2i_B_256
  convert_llamagen.py --gpt t2i_XL_stage1_256.pt --vq vq_ds16_t2i.pt \
      --drafter llamagen_drafter/pytorch_model.bin --out models/t2i_XL
The number of heads and the image size cannot be read from shapes: they come from --n-head,
--grid / --image-size, else from a LlamaGen model name (--model, else the --gpt file name, else the
checkpoint's saved training arguments), e.g. c2i_L_384 = 16 heads, 384 px / 16 = 24x24 tokens.

Without --vq, model.json still describes a VQ (VQ-16 with the GPT's codebook size), as the app's
manifest requires one. A LANTERN drafter (layers.0.self_attn.q/k/v/o_proj, mlp.gate/up/down_proj,
post_attention_layernorm, fc with bias) becomes wqkv = [q; k; v], wo, w1 = gate, w3 = up,
w2 = down, ffn_norm, with RMSNorm eps 1e-6; LANTERN applies LlamaGen's adjacent-pair 2-D RoPE in it,
so q and k need no Hugging Face rotate-half permutation.

Tensors that are not weights and are dropped on purpose (HARMLESS below): freqs_cis, causal_mask,
KV-cache buffers (*.kv_cache.*, *.k_cache, *.v_cache), quantize.codebook_used, and Hugging Face
rotary caches (*.rotary_emb.inv_freq / cos_cached / sin_cached); the drafter's embed_tokens.weight
(the target's embedding is used). Any other unexpected tensor is an error, as is a missing one.

Inputs are torch checkpoints (.pt, .bin) or .safetensors files. Needs only torch; uses the
`safetensors` package to write when it is installed, else the small writer below. Checkpoints are
opened with torch.load(weights_only=True); one that stores other Python objects
(LlamaGen saves its argparse arguments) falls back to full unpickling, with a warning: convert only
files you trust. Errors are one line on stderr and exit status 2.
"""
import argparse
import datetime
import hashlib
import inspect
import json
import math
import os
import pickle
import re
import shutil
import signal
import struct
import sys
import tempfile
import time
import zipfile
from collections.abc import Mapping
from pathlib import Path

import torch

CONVERTER_VERSION = "1"
REPO = Path(__file__).resolve().parent.parent
DEFAULT_CLASSES = REPO / "resources" / "imagenet" / "classes.json"

# LlamaGen model sizes -> attention heads (LLAMAGEN.md "Configs").
HEADS = {"B": 12, "L": 16, "XL": 20, "XXL": 24, "3B": 32}
# Written as model.json "vq" when no VQ checkpoint is converted (VQ-16, LLAMAGEN.md).
VQ16 = {"codebook_size": 16384, "codebook_dim": 8, "ch": 128, "ch_mult": [1, 1, 2, 2, 4],
        "z_channels": 256, "num_res_blocks": 2, "norm_groups": 32, "norm_eps": 1e-6}
SAMPLING = {"c2i": {"cfg_scale": 4.0, "temperature": 1.0, "top_k": 2000, "top_p": 1.0},
            "t2i-embeddings": {"cfg_scale": 7.5, "temperature": 1.0, "top_k": 1000, "top_p": 1.0}}
HARMLESS = re.compile(r"^(freqs_cis|causal_mask|quantize\.codebook_used)$"
                      r"|(^|\.)kv_cache\.|(^|\.)[kv]_cache$"
                      r"|(^|\.)rotary_emb\.(inv_freq|cos_cached|sin_cached)$")
# LANTERN (Hugging Face style) drafter names -> the app's names; q/k/v are fused into wqkv.
HF_DRAFTER = {"layers.0.self_attn.o_proj.weight": "layers.0.attention.wo.weight",
              "layers.0.mlp.gate_proj.weight": "layers.0.feed_forward.w1.weight",
              "layers.0.mlp.up_proj.weight": "layers.0.feed_forward.w3.weight",
              "layers.0.mlp.down_proj.weight": "layers.0.feed_forward.w2.weight",
              "layers.0.post_attention_layernorm.weight": "layers.0.ffn_norm.weight"}
HF_QKV = tuple(f"layers.0.self_attn.{p}_proj.weight" for p in "qkv")
ST_DTYPES = {torch.float64: "F64", torch.float32: "F32", torch.float16: "F16",
             torch.bfloat16: "BF16", torch.int64: "I64", torch.int32: "I32", torch.int16: "I16",
             torch.int8: "I8", torch.uint8: "U8", torch.bool: "BOOL"}
CAST = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


class ConvertError(Exception):
    """A problem with the user's input: reported as one line, exit status 2."""


def warn(msg):
    print(f"convert_llamagen: warning: {msg}", file=sys.stderr)


def listing(names, limit=10):
    names = sorted(names)
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


# ---- safetensors ---------------------------------------------------------------------------------

def write_safetensors(path, tensors, metadata, dtype=None):
    """Writes `tensors` (name -> tensor) to `path`, casting floating tensors to `dtype` if given.

    Uses the `safetensors` package when installed; else writes the format itself, one tensor at a
    time in name order: 8-byte little-endian header length, JSON header padded with spaces to a
    multiple of 8 bytes, then the raw little-endian data.
    """
    def out(t):
        t = t.detach().cpu()
        return t.to(dtype) if dtype is not None and t.is_floating_point() else t

    try:
        from safetensors.torch import save_file
    except ImportError:
        save_file = None
    if save_file is not None:
        save_file({n: out(t).contiguous() for n, t in tensors.items()}, str(path), metadata)
        return
    names = sorted(tensors)
    header, offset = {"__metadata__": metadata}, 0
    for n in names:
        t = tensors[n]
        dt = dtype if dtype is not None and t.is_floating_point() else t.dtype
        nbytes = t.numel() * torch.empty((), dtype=dt).element_size()
        header[n] = {"dtype": ST_DTYPES[dt], "shape": list(t.shape),
                     "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * (-len(blob) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(blob)))
        f.write(blob)
        for n in names:
            t = out(tensors[n]).contiguous()
            if t.dtype == torch.bfloat16:  # numpy has no bfloat16: write its bits
                t = t.view(torch.int16)
            f.write(memoryview(t.numpy()).cast("B"))


def read_safetensors(path):
    """Reads a safetensors file into (name -> tensor, metadata)."""
    by_name = {v: k for k, v in ST_DTYPES.items()}
    out = {}
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        meta = header.pop("__metadata__", {})
        for name, e in header.items():
            a, b = e["data_offsets"]
            dt = by_name[e["dtype"]]
            f.seek(8 + n + a)
            raw = bytearray(f.read(b - a))
            if len(raw) != b - a:
                raise ValueError(f"{name}: data past the end of the file")
            bits = torch.int16 if dt == torch.bfloat16 else dt
            t = torch.frombuffer(raw, dtype=bits) if raw else torch.empty(0, dtype=bits)
            out[name] = t.view(dt).reshape(e["shape"])
    return out, meta


# ---- loading -------------------------------------------------------------------------------------

def torch_load(path):
    """torch.load on the CPU: weights only where possible, memory-mapped where supported."""
    params = inspect.signature(torch.load).parameters
    kw = {"map_location": "cpu"}
    if "mmap" in params and zipfile.is_zipfile(path):
        kw["mmap"] = True
    if "weights_only" not in params:
        return torch.load(path, **kw)
    if hasattr(torch.serialization, "add_safe_globals"):
        torch.serialization.add_safe_globals([argparse.Namespace])
    try:
        return torch.load(path, weights_only=True, **kw)
    except pickle.UnpicklingError:
        obj = torch.load(path, weights_only=False, **kw)
        warn(f"{path.name} holds Python objects besides tensors: loaded with full unpickling "
             "(convert only files you trust)")
        return obj


def load_checkpoint(path, what):
    """Returns (state dict, saved training arguments or None) of a checkpoint file."""
    path = Path(path)
    if not path.is_file():
        raise ConvertError(f"{what} checkpoint {path}: file not found")
    if path.suffix == ".safetensors":
        try:
            return read_safetensors(path)[0], None
        except (ValueError, KeyError, struct.error) as e:
            raise ConvertError(f"{path}: not a valid safetensors file ({e})") from None
    try:
        obj = torch_load(path)
    except Exception as e:  # torch.load raises many types on foreign files
        reason = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise ConvertError(f"{path}: not a torch checkpoint (torch.load failed: "
                           f"{type(e).__name__} {reason[:160]})") from None

    def is_state_dict(d):
        return isinstance(d, Mapping) and d and all(isinstance(v, torch.Tensor) for v in d.values())

    sd = obj if is_state_dict(obj) else None
    if sd is None and isinstance(obj, Mapping):
        sd = next((obj[k] for k in ("model", "module", "state_dict", "ema")
                   if is_state_dict(obj.get(k))), None)
    if sd is None:
        keys = f" (top-level keys: {listing(map(str, obj))})" if isinstance(obj, Mapping) else ""
        raise ConvertError(f"{path}: no state dict found: expected tensors at the top level or "
                           f"under 'model', 'module', 'state_dict' or 'ema'{keys}")
    out = {}
    for k, v in sd.items():
        for prefix in ("module.", "_orig_mod."):
            k = k[len(prefix):] if k.startswith(prefix) else k
        out[k] = v
    args = obj.get("args") if isinstance(obj, Mapping) else None
    return out, args


def saved_arg(args, name):
    """A field of the training arguments LlamaGen saves next to the weights (Namespace or dict)."""
    if isinstance(args, Mapping):
        return args.get(name)
    return getattr(args, name, None)


def check_tensors(sd, expected, what):
    """Drops harmless buffers, refuses unknown, missing or misshapen tensors; returns the rest."""
    kept = {k: v for k, v in sd.items() if not HARMLESS.search(k)}
    unknown = set(kept) - set(expected)
    if unknown:
        raise ConvertError(f"{what}: {len(unknown)} unexpected tensor(s), not part of the "
                           f"configuration inferred from the shapes: {listing(unknown)}")
    missing = set(expected) - set(kept)
    if missing:
        raise ConvertError(f"{what}: {len(missing)} missing tensor(s): {listing(missing)}")
    bad = [f"{k} is {list(kept[k].shape)}, expected {list(s)}"
           for k, s in sorted(expected.items()) if tuple(kept[k].shape) != tuple(s)]
    if bad:
        raise ConvertError(f"{what}: inconsistent shapes: {'; '.join(bad[:5])}")
    return kept


def need(sd, name, what, rank=None):
    if name not in sd:
        raise ConvertError(f"{what}: missing tensor {name} (is this the right checkpoint?)")
    if rank is not None and sd[name].dim() != rank:
        raise ConvertError(f"{what}: {name} is {list(sd[name].shape)}, expected a {rank}-d tensor")
    return sd[name]


def indices(sd, pattern):
    """The sorted distinct integers captured by `pattern` in the tensor names."""
    rx = re.compile(pattern)
    return sorted({int(m.group(1)) for k in sd for m in [rx.match(k)] if m})


# ---- GPT -----------------------------------------------------------------------------------------

def ffn_hidden(dim, multiple_of):
    h = 8 * dim // 3
    return multiple_of * -(-h // multiple_of)


def gpt_shapes(c):
    """Mirror of gpt_param_specs (core/model/llamagen/gpt.cpp): name -> shape."""
    d, hid = c["dim"], ffn_hidden(c["dim"], c["multiple_of"])
    s = {}
    if c["cond"] == "class":
        s["cls_embedding.embedding_table.weight"] = (c["num_classes"] + 1, d)
    else:
        s["cls_embedding.cap_proj.fc1.weight"] = (d, c["cap_dim"])
        s["cls_embedding.cap_proj.fc2.weight"] = (d, d)
        s["cls_embedding.uncond_embedding"] = (c["cond_len"], c["cap_dim"])
    s["tok_embeddings.weight"] = (c["vocab_size"], d)
    for i in range(c["n_layer"]):
        p = f"layers.{i}."
        s[p + "attention.wqkv.weight"] = (3 * d, d)
        s[p + "attention.wo.weight"] = (d, d)
        s[p + "feed_forward.w1.weight"] = (hid, d)
        s[p + "feed_forward.w2.weight"] = (d, hid)
        s[p + "feed_forward.w3.weight"] = (hid, d)
        s[p + "attention_norm.weight"] = (d,)
        s[p + "ffn_norm.weight"] = (d,)
    s["norm.weight"] = (d,)
    s["output.weight"] = (c["vocab_size"], d)
    return s


def model_names(opts, ckpt_args):
    """Candidate LlamaGen model names with where each came from, most trusted first."""
    names = []
    if opts.model:
        names.append((re.sub(r"\.(pt|pth|bin|safetensors)$", "", Path(opts.model).name),
                      "--model"))
    names.append((Path(opts.gpt).stem, "the --gpt file name"))
    if saved_arg(ckpt_args, "gpt_model"):
        names.append((str(saved_arg(ckpt_args, "gpt_model")), "the checkpoint's saved arguments"))
    return names


def resolve_heads(opts, names):
    if opts.n_head:
        return opts.n_head, "--n-head"
    for name, src in names:
        for token in re.split(r"[^0-9A-Za-z]+", name.upper()):
            if token in HEADS:
                return HEADS[token], f"size {token} in {src} '{name}'"
    raise ConvertError("cannot tell the number of attention heads from the weights: pass --n-head "
                       "or a LlamaGen model name with --model (e.g. c2i_B_256, GPT-XL)")


def resolve_grid(opts, names, ckpt_args, downsample):
    if opts.grid:
        return opts.grid, "--grid"
    px, src = opts.image_size, "--image-size"
    for name, where in names if px is None else ():
        m = re.search(r"[_-](\d{2,4})$", name)
        if m:
            px, src = int(m.group(1)), f"{where} '{name}'"
            break
    if px is None and saved_arg(ckpt_args, "image_size"):
        px, src = int(saved_arg(ckpt_args, "image_size")), "the checkpoint's saved arguments"
    if px is None:
        raise ConvertError("cannot tell the token grid: pass --grid G, --image-size PX or a model "
                           "name ending in the image size with --model (e.g. c2i_L_384)")
    if px % downsample:
        raise ConvertError(f"image size {px} px (from {src}) is not a multiple of the VQ "
                           f"downsampling factor {downsample}")
    return px // downsample, f"{px} px from {src} / {downsample}"


def gpt_config(sd, opts, ckpt_args, downsample):
    """Infers the GptConfig (core/model/llamagen/gpt_config.cpp keys) from the shapes and the names."""
    what = "GPT checkpoint"
    vocab, dim = need(sd, "tok_embeddings.weight", what, 2).shape
    out_rows = need(sd, "output.weight", what, 2).shape[0]
    if out_rows != vocab:
        raise ConvertError(f"{what}: output.weight has {out_rows} rows, tok_embeddings.weight "
                           f"{vocab}: the vocabularies differ")
    layers = indices(sd, r"layers\.(\d+)\.")
    if not layers or layers != list(range(len(layers))):
        raise ConvertError(f"{what}: the layers.N.* tensors are not numbered 0..n-1 "
                           f"(found {layers[:10]})")
    hidden = need(sd, "layers.0.feed_forward.w1.weight", what, 2).shape[0]
    multiple_of = next((m for m in (256, 128, 64, 32, 16, 8, 4, 2, 1, hidden)
                        if ffn_hidden(dim, m) == hidden), None)
    if multiple_of is None:
        raise ConvertError(f"{what}: FFN width {hidden} is below int(8 * dim / 3) = {8 * dim // 3} "
                           f"for dim {dim}: not a LlamaGen FFN")
    names = model_names(opts, ckpt_args)
    n_head, heads_from = resolve_heads(opts, names)
    if dim % n_head or (dim // n_head) % 4:
        raise ConvertError(f"dim {dim} with {n_head} heads: the head size must be a whole number "
                           "divisible by 4 (2-D RoPE); check --n-head / --model")
    grid, grid_from = resolve_grid(opts, names, ckpt_args, downsample)
    c = {"dim": int(dim), "n_layer": len(layers), "n_head": n_head, "vocab_size": int(vocab),
         "grid": [grid, grid]}
    if "cls_embedding.embedding_table.weight" in sd:
        c["cond"] = "class"
        c["num_classes"] = int(sd["cls_embedding.embedding_table.weight"].shape[0]) - 1
    elif "cls_embedding.cap_proj.fc1.weight" in sd:
        c["cond"] = "caption"
        c["cap_dim"] = int(sd["cls_embedding.cap_proj.fc1.weight"].shape[1])
        c["cond_len"] = int(need(sd, "cls_embedding.uncond_embedding", what, 2).shape[0])
        c["num_words"] = 0
    else:
        raise ConvertError(f"{what}: neither cls_embedding.embedding_table.weight (c2i) nor "
                           "cls_embedding.cap_proj.fc1.weight (t2i): unknown conditioning")
    c.update(multiple_of=multiple_of, norm_eps=1e-5, rope_base=10000.0)
    return c, f"n_head {n_head} from {heads_from}; grid {grid}x{grid} from {grid_from}"


# ---- VQ ------------------------------------------------------------------------------------------

def vq_shapes(c, with_encoder):
    """Mirror of vq_param_specs (core/model/llamagen/vq.cpp): name -> shape."""
    s = {}

    def conv(p, cin, cout, k):
        s[p + ".weight"], s[p + ".bias"] = (cout, cin, k, k), (cout,)

    def norm(p, ch):
        s[p + ".weight"], s[p + ".bias"] = (ch,), (ch,)

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

    ch, mult, nrb, levels = c["ch"], c["ch_mult"], c["num_res_blocks"], len(c["ch_mult"])
    top = ch * mult[-1]
    if with_encoder:
        conv("encoder.conv_in", 3, ch, 3)
        cin = ch
        for lv in range(levels):
            p, cout = f"encoder.conv_blocks.{lv}", ch * mult[lv]
            for j in range(nrb):
                res(f"{p}.res.{j}", cin, cout)
                cin = cout
                if lv == levels - 1:
                    attn(f"{p}.attn.{j}", cout)
            if lv != levels - 1:
                conv(p + ".downsample.conv", cout, cout, 3)
        mid("encoder.mid", top)
        norm("encoder.norm_out", top)
        conv("encoder.conv_out", top, c["z_channels"], 3)
        conv("quant_conv", c["z_channels"], c["codebook_dim"], 1)
    conv("decoder.conv_in", c["z_channels"], top, 3)
    mid("decoder.mid", top)
    cin = top
    for lv in range(levels):
        p, cout = f"decoder.conv_blocks.{lv}", ch * mult[levels - 1 - lv]
        for j in range(nrb + 1):
            res(f"{p}.res.{j}", cin, cout)
            cin = cout
            if lv == 0:
                attn(f"{p}.attn.{j}", cout)
        if lv != levels - 1:
            conv(p + ".upsample.conv", cout, cout, 3)
    norm("decoder.norm_out", cin)
    conv("decoder.conv_out", cin, 3, 3)
    s["quantize.embedding.weight"] = (c["codebook_size"], c["codebook_dim"])
    conv("post_quant_conv", c["codebook_dim"], c["z_channels"], 1)
    return s


def vq_config(sd):
    """Infers the VqConfig (core/model/llamagen/vq.cpp keys) from the shapes."""
    what = "VQ checkpoint"
    size, cdim = need(sd, "quantize.embedding.weight", what, 2).shape
    z = need(sd, "post_quant_conv.weight", what, 4).shape[0]
    levels = indices(sd, r"decoder\.conv_blocks\.(\d+)\.")
    if not levels or levels != list(range(len(levels))):
        raise ConvertError(f"{what}: no decoder.conv_blocks.N.* tensors numbered 0..n-1: "
                           "is this a LlamaGen VQ?")
    widths = [need(sd, f"decoder.conv_blocks.{lv}.res.0.conv1.weight", what, 4).shape[0]
              for lv in levels]  # ch * ch_mult[levels - 1 - lv]
    encoder = "encoder.conv_in.weight" in sd
    ch = sd["encoder.conv_in.weight"].shape[0] if encoder else math.gcd(*widths)
    if any(w % ch for w in widths):
        raise ConvertError(f"{what}: decoder widths {widths} are not multiples of ch {ch}")
    nrb = len(indices(sd, r"decoder\.conv_blocks\.0\.res\.(\d+)\.")) - 1
    if nrb < 1:
        raise ConvertError(f"{what}: the decoder needs at least 2 res blocks per level")
    c = {"codebook_size": int(size), "codebook_dim": int(cdim), "ch": int(ch),
         "ch_mult": [int(w // ch) for w in reversed(widths)], "z_channels": int(z),
         "num_res_blocks": nrb, "norm_groups": 32, "norm_eps": 1e-6}
    if any(ch * m % 32 for m in [1] + c["ch_mult"]):
        raise ConvertError(f"{what}: channel widths {widths} are not divisible by 32 GroupNorm "
                           "groups")
    return c, encoder


# ---- drafter -------------------------------------------------------------------------------------

def drafter_shapes(g):
    """Mirror of drafter_param_specs (core/model/llamagen/drafter.cpp): name -> shape."""
    d, hid = g["dim"], ffn_hidden(g["dim"], g["multiple_of"])
    return {"fc.weight": (d, 2 * d), "fc.bias": (d,),
            "layers.0.attention.wqkv.weight": (3 * d, d), "layers.0.attention.wo.weight": (d, d),
            "layers.0.feed_forward.w1.weight": (hid, d),
            "layers.0.feed_forward.w2.weight": (d, hid),
            "layers.0.feed_forward.w3.weight": (hid, d), "layers.0.ffn_norm.weight": (d,)}


def drafter_weights(sd, g, tok_embeddings, opts):
    """Renames a LANTERN (HF-style) or app-style drafter; returns (weights, model.json entry)."""
    what = "drafter checkpoint"
    ours = drafter_shapes(g)
    emb = sd.pop("embed_tokens.weight", None)
    hf = [k for k in sd if k in HF_DRAFTER or k in HF_QKV]
    native = [k for k in sd if k in ours and not k.startswith("fc.")]
    if hf and native:
        raise ConvertError(f"{what}: mixes Hugging Face names ({listing(hf, 3)}) with the app's "
                           f"names ({listing(native, 3)})")
    if hf:
        for k in HF_QKV:
            need(sd, k, what, 2)
        sd = dict(sd)
        sd["layers.0.attention.wqkv.weight"] = torch.cat([sd.pop(k) for k in HF_QKV], 0)
        sd = {HF_DRAFTER.get(k, k): v for k, v in sd.items()}
    kept = check_tensors(sd, ours, f"{what} (target dim {g['dim']}, FFN "
                                   f"{ffn_hidden(g['dim'], g['multiple_of'])})")
    if emb is not None:
        same = emb.shape == tok_embeddings.shape and torch.equal(
            emb, tok_embeddings.to(emb.dtype))
        if not same:
            diff = (f"max |difference| {(emb.float() - tok_embeddings.float()).abs().max():.3g}"
                    if emb.shape == tok_embeddings.shape else f"shape {list(emb.shape)}")
            warn(f"the drafter's embed_tokens.weight differs from the target's tok_embeddings "
                 f"({diff}); the target's is used, as in EAGLE")
    entry = {"kind": "eagle1", "layers": 1,
             "norm_eps": 1e-6 if hf else opts.drafter_norm_eps,
             "source": "lantern-hf" if hf else "adtree"}
    return kept, entry


# ---- output --------------------------------------------------------------------------------------

def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 24), b""):
            h.update(block)
    return h.hexdigest()


def source_entry(path):
    path = Path(path)
    return {"file": path.name, "bytes": path.stat().st_size, "sha256": sha256(path)}


def class_names(opts, n):
    """The class names for text.json: --classes, else the repository's ImageNet list."""
    path = Path(opts.classes) if opts.classes else DEFAULT_CLASSES
    if not path.is_file():
        if opts.classes:
            raise ConvertError(f"class names {path}: file not found")
        warn(f"{path} not found: naming the classes 'class 0' .. 'class {n - 1}'")
        return [f"class {i}" for i in range(n)]
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text)
        names = data["classes"] if isinstance(data, Mapping) else data
    except (json.JSONDecodeError, KeyError):
        names = [line.strip() for line in text.splitlines() if line.strip()]
    if not isinstance(names, list) or not all(isinstance(x, str) for x in names):
        raise ConvertError(f"class names {path}: expected a JSON list of strings, a JSON object "
                           "with one under 'classes', or one name per line")
    if len(names) != n:
        if opts.classes:
            raise ConvertError(f"class names {path}: {len(names)} names, the GPT has {n} classes")
        warn(f"{path} has {len(names)} names, the GPT {n} classes: naming them 'class 0' .. "
             f"'class {n - 1}'")
        return [f"class {i}" for i in range(n)]
    return names


def prepare_out(out, force):
    if out.exists() and not out.is_dir():
        raise ConvertError(f"--out {out}: exists and is not a directory")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise ConvertError(f"--out {out}: directory exists and is not empty (use --force to "
                           "replace it)")
    out.parent.mkdir(parents=True, exist_ok=True)


def publish(tmp, out):
    """Moves the finished temporary directory into place, replacing `out` only now."""
    old = None
    if out.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
        out.rename(old / out.name)
    tmp.rename(out)
    if old is not None:
        shutil.rmtree(old)


def count(tensors):
    return sum(t.numel() for t in tensors.values())


def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="Convert LlamaGen checkpoints (and a LANTERN EAGLE drafter) into an ADT-Tree "
                    "Studio model directory.",
        epilog="n_head and the grid are not stored in the weights: they come from --n-head / "
               "--grid / --image-size, else from a LlamaGen model name (--model, else the --gpt "
               "file name, else the checkpoint's saved arguments). Exit status 2 on bad input.")
    ap.add_argument("--gpt", required=True, help="LlamaGen GPT checkpoint (.pt)")
    ap.add_argument("--vq", help="LlamaGen VQ checkpoint (vq_ds16_c2i.pt / vq_ds16_t2i.pt); "
                                 "without it the directory has no image decoder")
    ap.add_argument("--drafter", help="EAGLE-1 drafter (LANTERN pytorch_model.bin, HF names)")
    ap.add_argument("--out", required=True, help="model directory to create")
    ap.add_argument("--model", help="LlamaGen model name, e.g. c2i_B_256, c2i_XL_384, "
                                    "t2i_XL_stage1_256, GPT-L (gives n_head and the image size)")
    ap.add_argument("--n-head", type=int, help="attention heads (overrides --model)")
    ap.add_argument("--image-size", type=int, help="image size in pixels (256, 384, 512)")
    ap.add_argument("--grid", type=int, help="token grid side (overrides --image-size)")
    ap.add_argument("--classes", help="class names for c2i: JSON list, JSON {'classes': [...]} or "
                                      "one per line (default: resources/imagenet/classes.json)")
    ap.add_argument("--dtype", choices=sorted(CAST), help="cast floating weights (default: keep "
                                                          "the checkpoint's, fp32 for LlamaGen)")
    ap.add_argument("--drafter-norm-eps", type=float, default=1e-5,
                    help="RMSNorm eps of a drafter stored with the app's names (HF-style LANTERN "
                         "drafters use 1e-6)")
    ap.add_argument("--name", help="model name in model.json (default: the model name or --out)")
    ap.add_argument("--force", action="store_true", help="replace a non-empty --out")
    opts = ap.parse_args(argv)
    for key in ("n_head", "image_size", "grid"):
        if getattr(opts, key) is not None and getattr(opts, key) <= 0:
            ap.error(f"--{key.replace('_', '-')} must be positive")
    return opts


def convert(opts):
    started = time.time()
    out = Path(opts.out)
    prepare_out(out, opts.force)
    dtype = CAST.get(opts.dtype)
    vq_sd, vq_cfg, encoder = None, None, False
    if opts.vq:
        vq_sd, _ = load_checkpoint(opts.vq, "VQ")
        vq_cfg, encoder = vq_config(vq_sd)
        vq_sd = check_tensors(vq_sd, vq_shapes(vq_cfg, encoder), f"VQ checkpoint {opts.vq}")
    gpt_sd, ckpt_args = load_checkpoint(opts.gpt, "GPT")
    downsample = 2 ** (len(vq_cfg["ch_mult"]) - 1) if opts.vq else int(
        saved_arg(ckpt_args, "downsample_size") or 16)
    g, how = gpt_config(gpt_sd, opts, ckpt_args, downsample)
    gpt_sd = check_tensors(gpt_sd, gpt_shapes(g), f"GPT checkpoint {opts.gpt}")
    if vq_cfg is None:  # no decoder converted: describe the VQ-16 the GPT's tokens came from
        vq_cfg = dict(VQ16, codebook_size=g["vocab_size"])
    elif vq_cfg["codebook_size"] != g["vocab_size"]:
        raise ConvertError(f"the VQ codebook has {vq_cfg['codebook_size']} codes, the GPT a "
                           f"vocabulary of {g['vocab_size']}: they do not belong together")
    kind = "c2i" if g["cond"] == "class" else "t2i-embeddings"
    name = opts.name or next((n for n, src in model_names(opts, ckpt_args) if src == "--model"),
                             None) or out.name
    meta = {"format": "pt", "converter": f"convert_llamagen.py {CONVERTER_VERSION}"}
    summary = [f"gpt      {kind}: {g['n_layer']} layers x {g['n_head']} heads x dim {g['dim']}, "
               f"FFN {ffn_hidden(g['dim'], g['multiple_of'])}, vocab {g['vocab_size']}, "
               f"grid {g['grid'][0]}x{g['grid'][1]} ({how})"]

    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
    umask = os.umask(0)
    os.umask(umask)
    tmp.chmod(0o777 & ~umask)  # mkdtemp makes it private; the model directory should not be
    try:
        files = {}
        write_safetensors(tmp / "gpt.safetensors", gpt_sd, dict(meta, source=Path(opts.gpt).name),
                          dtype)
        files["gpt.safetensors"] = count(gpt_sd)
        tok_embeddings = gpt_sd["tok_embeddings.weight"] if opts.drafter else None
        del gpt_sd
        if vq_sd is not None:
            write_safetensors(tmp / "vq.safetensors", vq_sd, dict(meta, source=Path(opts.vq).name),
                              dtype)
            files["vq.safetensors"] = count(vq_sd)
            summary.append(f"vq       codebook {vq_cfg['codebook_size']} x "
                           f"{vq_cfg['codebook_dim']}, ch {vq_cfg['ch']} x {vq_cfg['ch_mult']}, "
                           f"z {vq_cfg['z_channels']}, {vq_cfg['num_res_blocks']} res blocks, "
                           f"{'encoder + decoder' if encoder else 'decoder only'}")
            del vq_sd
        drafter = None
        if opts.drafter:
            dsd, _ = load_checkpoint(opts.drafter, "drafter")
            dsd, drafter = drafter_weights(dsd, g, tok_embeddings, opts)
            write_safetensors(tmp / "drafter.safetensors", dsd,
                              dict(meta, source=Path(opts.drafter).name), dtype)
            files["drafter.safetensors"] = count(dsd)
            summary.append(f"drafter  EAGLE-1, 1 layer, {drafter['source']} names, "
                           f"norm eps {drafter['norm_eps']:g}")
            del dsd, tok_embeddings
        if kind == "c2i":
            text = {"kind": "classes", "classes": class_names(opts, g["num_classes"])}
            (tmp / "text.json").write_text(json.dumps(text, indent=1, ensure_ascii=False) + "\n",
                                           encoding="utf-8")
        sources = {"gpt": source_entry(opts.gpt)}
        if opts.vq:
            sources["vq"] = source_entry(opts.vq)
        if opts.drafter:
            sources["drafter"] = source_entry(opts.drafter)
        sampling = dict(SAMPLING[kind])
        sampling["top_k"] = min(sampling["top_k"], g["vocab_size"])
        licence = {"weights": "see the LlamaGen release (MIT code licence; check the model's "
                              "terms)"}
        if drafter:
            licence["drafter"] = "see the LANTERN release (github.com/jadohu/LANTERN; check its " \
                                 "terms)"
        gsize = f"{g['n_layer']}x{g['n_head']}x{g['dim']}"
        manifest = {
            "format": "adtree-model", "format_version": 1, "name": name, "kind": kind,
            "description": f"LlamaGen {kind} transformer ({gsize}, "
                           f"{files['gpt.safetensors'] / 1e6:.3g}M parameters), "
                           f"{g['grid'][0]}x{g['grid'][1]} tokens"
                           + ("" if opts.vq else ", no VQ decoder (convert with --vq to decode)")
                           + (", LANTERN EAGLE drafter" if drafter else "")
                           + "; converted by convert_llamagen.py",
            "grid": g["grid"], "codebook_size": g["vocab_size"], "gpt": g, "vq": vq_cfg,
            "sampling": sampling, "license": licence,
            "provenance": {"tool": "convert_llamagen.py", "converter_version": CONVERTER_VERSION,
                           "date": datetime.datetime.now(datetime.timezone.utc)
                           .isoformat(timespec="seconds"),
                           "sources": sources, "sha256": "of each whole source file",
                           "storage_dtype": opts.dtype or "as stored", "inferred": how,
                           "vq_included": bool(opts.vq)}}
        if drafter:
            manifest["drafter"] = drafter
        (tmp / "model.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        written = sum(f.stat().st_size for f in tmp.iterdir())
        publish(tmp, out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    for f, n in files.items():
        summary.append(f"{f:<20} {n / 1e6:10.3f}M parameters")
    summary.append(f"wrote {out} ({written / 1e6:.1f} MB) in {time.time() - started:.1f} s")
    print("\n".join(summary))


def main(argv=None):
    torch.set_num_threads(1)
    # SIGTERM unwinds like Ctrl-C, so the temporary directory is removed on the way out.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    opts = parse_args(argv)
    try:
        convert(opts)
    except ConvertError as e:
        print(f"convert_llamagen: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
