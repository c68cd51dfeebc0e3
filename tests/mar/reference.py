#!/usr/bin/env python3
"""Independent MAR reference and fixture maker for the C++ parity test (issue "MAR checkpoints").

Why: the C++ MAR runtime (core/model/mar) must match LTH14/mar in every detail that changes a
picture: the buffer carrying the class embedding, which slots the encoder keeps, where the decoder
puts them back, the cosine masking schedule and the order tokens leave the mask, the linear CFG
ramp, the respaced cosine DDPM with its learned-range variance and no noise on the last step. This
file computes them a second time, written from models/mar.py's, models/diffloss.py's and
diffusion/'s definitions as docs/mar.md states them (not from core/model/mar and not by copying
MAR's code), so only a shared misreading can make both agree on a wrong answer. fp32, one thread,
a seed gives the same bytes on every run.

How:
  reference.py --out DIR [--seed 0]
      DIR/checkpoint-last.pth   a small random MAR in MAR's checkpoint layout: {model, model_ema,
                                optimizer, epoch, scaler, args (an argparse.Namespace)}; model and
                                model_ema differ, and sampling must use model_ema
      DIR/reference.safetensors inputs and outputs (below), DIR/meta.json the shape
  reference.py --out DIR --shapes B|L|H [--outputs]
      random weights in the released shapes, no outputs (the converter's round trip), or with
      --outputs the same outputs as the small model's at that shape

reference.safetensors (B = 2 rows, N = 16 tokens, D = 16 numbers, K sampling steps):
  labels [B] I64; tokens [B, N, D] F32 and unknown [B, N] U8 (1: not generated): the inputs of
  z [B, N, Dd] F32, the decoder's head conditions for those rows, no CFG;
  orders [B, N] I64, x_T [B, N, D], noise [B, N, K, D] F32: the injected randomness of a whole
  generation (position i's head starts at x_T[b, i] and takes noise[b, i, step] at each step; the
  last step adds none, as MAR's DDPM); sampled [B, N, D] F32: its tokens with num_iter 4, CFG 3
  on the linear schedule, temperature 0.9.

Small model: token grid 4 x 4, D 16, encoder and decoder 32 wide, 2 blocks each, 4 heads, buffer
8, 10 classes; head 32 wide, 2 blocks, 1000 training steps respaced to 10. Weights: matrices
N(0, 1/fan_in), biases and embeddings N(0, 0.1) and N(0, 1), norms 1 + N(0, 0.1): MAR's own init
zeroes the head's output and modulation layers and every bias, which would hide their mistakes.
"""
import argparse
import json
import math
import sys
from pathlib import Path

import torch

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from convert_llamagen import write_safetensors  # noqa: E402  (file IO only, no model code)

SMALL = {"grid": 4, "token_dim": 16, "encoder_dim": 32, "encoder_depth": 2, "encoder_heads": 4,
         "decoder_dim": 32, "decoder_depth": 2, "decoder_heads": 4, "buffer_size": 8,
         "num_classes": 10, "head_width": 32, "head_blocks": 2, "sample_steps": 10,
         "model": "mar_small_test"}
RELEASED = {"B": (768, 12, 12, 1024, 6, "mar_base"), "L": (1024, 16, 16, 1280, 8, "mar_large"),
            "H": (1280, 20, 16, 1536, 12, "mar_huge")}
EPS = 1e-6


def layout(c):
    """MAR's state-dict names and shapes: the backbone, then the head under diffloss.net."""
    e, d, n, slots = c["encoder_dim"], c["decoder_dim"], c["grid"] ** 2, c["buffer_size"] + c["grid"] ** 2
    t = {"class_emb.weight": (c["num_classes"], e), "fake_latent": (1, e),
         "z_proj.weight": (e, c["token_dim"]), "z_proj.bias": (e,),
         "z_proj_ln.weight": (e,), "z_proj_ln.bias": (e,),
         "encoder_pos_embed_learned": (1, slots, e), "encoder_norm.weight": (e,),
         "encoder_norm.bias": (e,), "decoder_embed.weight": (d, e), "decoder_embed.bias": (d,),
         "mask_token": (1, 1, d), "decoder_pos_embed_learned": (1, slots, d),
         "decoder_norm.weight": (d,), "decoder_norm.bias": (d,),
         "diffusion_pos_embed_learned": (1, n, d)}
    for stack, depth, w in (("encoder_blocks", c["encoder_depth"], e),
                            ("decoder_blocks", c["decoder_depth"], d)):
        for i in range(depth):
            p = f"{stack}.{i}."
            for name, shape in (("norm1.weight", (w,)), ("norm1.bias", (w,)),
                                ("attn.qkv.weight", (3 * w, w)), ("attn.qkv.bias", (3 * w,)),
                                ("attn.proj.weight", (w, w)), ("attn.proj.bias", (w,)),
                                ("norm2.weight", (w,)), ("norm2.bias", (w,)),
                                ("mlp.fc1.weight", (4 * w, w)), ("mlp.fc1.bias", (4 * w,)),
                                ("mlp.fc2.weight", (w, 4 * w)), ("mlp.fc2.bias", (w,))):
                t[p + name] = shape
    hw, tok = c["head_width"], c["token_dim"]
    h = "diffloss.net."
    t.update({h + "time_embed.mlp.0.weight": (hw, 256), h + "time_embed.mlp.0.bias": (hw,),
              h + "time_embed.mlp.2.weight": (hw, hw), h + "time_embed.mlp.2.bias": (hw,),
              h + "cond_embed.weight": (hw, d), h + "cond_embed.bias": (hw,),
              h + "input_proj.weight": (hw, tok), h + "input_proj.bias": (hw,),
              h + "final_layer.linear.weight": (2 * tok, hw), h + "final_layer.linear.bias": (2 * tok,),
              h + "final_layer.adaLN_modulation.1.weight": (2 * hw, hw),
              h + "final_layer.adaLN_modulation.1.bias": (2 * hw,)})
    for i in range(c["head_blocks"]):
        p = f"{h}res_blocks.{i}."
        t.update({p + "in_ln.weight": (hw,), p + "in_ln.bias": (hw,),
                  p + "mlp.0.weight": (hw, hw), p + "mlp.0.bias": (hw,),
                  p + "mlp.2.weight": (hw, hw), p + "mlp.2.bias": (hw,),
                  p + "adaLN_modulation.1.weight": (3 * hw, hw), p + "adaLN_modulation.1.bias": (3 * hw,)})
    return t


def init(shapes, gen):
    out = {}
    for name, shape in shapes.items():
        if len(shape) == 2 and not name.endswith(("class_emb.weight", "fake_latent")):
            out[name] = torch.randn(shape, generator=gen) / math.sqrt(shape[1])
        elif name.endswith("weight") and len(shape) == 1:
            out[name] = 1 + 0.1 * torch.randn(shape, generator=gen)
        elif name.endswith("bias"):
            out[name] = 0.1 * torch.randn(shape, generator=gen)
        else:
            out[name] = torch.randn(shape, generator=gen)
    return out


# ---- the model, from MAR's definitions ----

def ln(x, w, name):
    return torch.nn.functional.layer_norm(x, x.shape[-1:], w[name + ".weight"], w[name + ".bias"], EPS)


def lin(x, w, name):
    return x @ w[name + ".weight"].T + w[name + ".bias"]


def vit_block(x, w, p, heads):
    b, n, dim = x.shape
    qkv = lin(ln(x, w, p + "norm1"), w, p + "attn.qkv").reshape(b, n, 3, heads, dim // heads)
    q, k, v = qkv.permute(2, 0, 3, 1, 4)
    att = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(dim // heads), dim=-1)
    x = x + lin((att @ v).transpose(1, 2).reshape(b, n, dim), w, p + "attn.proj")
    h = lin(ln(x, w, p + "norm2"), w, p + "mlp.fc1")
    return x + lin(torch.nn.functional.gelu(h), w, p + "mlp.fc2")


def backbone(c, w, tokens, unknown, cls):
    """tokens [B, N, D], unknown [B, N] bool, cls [B, E] -> z [B, N, Dd]."""
    b, n, _ = tokens.shape
    buf = c["buffer_size"]
    x = lin(tokens, w, "z_proj")
    x = torch.cat([cls[:, None, :].expand(b, buf, -1), x], dim=1) + w["encoder_pos_embed_learned"]
    x = ln(x, w, "z_proj_ln")
    keep = torch.cat([torch.ones(b, buf, dtype=torch.bool), ~unknown], dim=1)
    x = torch.stack([x[i][keep[i]] for i in range(b)])
    for i in range(c["encoder_depth"]):
        x = vit_block(x, w, f"encoder_blocks.{i}.", c["encoder_heads"])
    x = lin(ln(x, w, "encoder_norm"), w, "decoder_embed")
    y = w["mask_token"].expand(b, buf + n, -1).clone()
    for i in range(b):
        y[i][keep[i]] = x[i]
    y = y + w["decoder_pos_embed_learned"]
    for i in range(c["decoder_depth"]):
        y = vit_block(y, w, f"decoder_blocks.{i}.", c["decoder_heads"])
    return ln(y, w, "decoder_norm")[:, buf:] + w["diffusion_pos_embed_learned"]


def head(w, x, t, z):
    """SimpleMLPAdaLN: x [R, D], t [R] training steps, z [R, Dd] -> [R, 2D]."""
    h = "diffloss.net."
    half = 128
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32) / half)
    args = t[:, None].float() * freqs[None]
    temb = torch.cat([torch.cos(args), torch.sin(args)], dim=-1)
    temb = lin(torch.nn.functional.silu(lin(temb, w, h + "time_embed.mlp.0")), w, h + "time_embed.mlp.2")
    y = temb + lin(z, w, h + "cond_embed")
    x = lin(x, w, h + "input_proj")
    i = 0
    while f"{h}res_blocks.{i}.in_ln.weight" in w:
        p = f"{h}res_blocks.{i}."
        shift, scale, gate = lin(torch.nn.functional.silu(y), w, p + "adaLN_modulation.1").chunk(3, -1)
        a = ln(x, w, p + "in_ln") * (1 + scale) + shift
        x = x + gate * lin(torch.nn.functional.silu(lin(a, w, p + "mlp.0")), w, p + "mlp.2")
        i += 1
    shift, scale = lin(torch.nn.functional.silu(y), w, h + "final_layer.adaLN_modulation.1").chunk(2, -1)
    x = torch.nn.functional.layer_norm(x, x.shape[-1:], eps=EPS) * (1 + scale) + shift
    return lin(x, w, h + "final_layer.linear")


def schedule(train_steps, sample_steps):
    """Cosine alpha-bar (s 0.008, betas capped at 0.999), respaced to `sample_steps` evenly spread
    training steps (a running sum of the stride, rounded; first and last included); returns the
    kept steps and their betas."""
    ab = lambda t: math.cos((t + 0.008) / 1.008 * math.pi / 2) ** 2  # noqa: E731
    betas = [min(1 - ab((i + 1) / train_steps) / ab(i / train_steps), 0.999) for i in range(train_steps)]
    cum, alpha_bar = 1.0, []
    for beta in betas:
        cum *= 1 - beta
        alpha_bar.append(cum)
    stride = (train_steps - 1) / (sample_steps - 1) if sample_steps > 1 else 0
    kept, cur = set(), 0.0
    for _ in range(sample_steps):
        kept.add(round(cur))  # Python's round: half to even
        cur += stride
    kept = sorted(kept)
    new_betas, last = [], 1.0
    for k in kept:
        new_betas.append(1 - alpha_bar[k] / last)
        last = alpha_bar[k]
    return kept, torch.tensor(new_betas, dtype=torch.float64)


def sample_tokens(c, w, z, cfg, temperature, x_T, noise):
    """One batch of head samples. z [2R, Dd] (conditional rows, then unconditional) when cfg != 1;
    x_T [R, D], noise [R, K, D]. DDPM from x_T over the respaced steps, epsilon mixed as
    uncond + cfg (cond - uncond), learned-range variance, std times the temperature, no noise on
    the last step."""
    kept, betas = schedule(1000, c["sample_steps"])
    alphas = 1 - betas
    ab = torch.cumprod(alphas, 0)
    ab_prev = torch.cat([torch.ones(1, dtype=torch.float64), ab[:-1]])
    post_var = betas * (1 - ab_prev) / (1 - ab)
    post_log = torch.log(torch.cat([post_var[1:2], post_var[1:]]))  # clipped: step 0 takes step 1's
    d = x_T.shape[1]
    x = x_T.clone()
    guided = cfg != 1.0
    K = len(kept)
    for step in range(K):
        k = K - 1 - step
        t = torch.full((z.shape[0],), kept[k], dtype=torch.long)
        out = head(w, torch.cat([x, x]) if guided else x, t, z)
        eps, v = out[:, :d], out[:, d:]
        if guided:
            cond, uncond = eps.chunk(2)
            eps = uncond + cfg * (cond - uncond)
            v = v[: x.shape[0]]
        x0 = (x.double() - torch.sqrt(1 - ab[k]) * eps.double()) / torch.sqrt(ab[k])
        mean = (betas[k] * torch.sqrt(ab_prev[k]) / (1 - ab[k])) * x0 + \
            ((1 - ab_prev[k]) * torch.sqrt(alphas[k]) / (1 - ab[k])) * x.double()
        frac = (v.double() + 1) / 2
        log_var = frac * torch.log(betas[k]) + (1 - frac) * post_log[k]
        x = mean + (0 if k == 0 else 1) * torch.exp(0.5 * log_var) * temperature * noise[:, step].double()
        x = x.float()
    return x


def generate(c, w, labels, orders, x_T, noise, num_iter, cfg, temperature):
    """MAR's sample_tokens with the randomness injected: a cosine masking schedule; the tokens that
    leave the mask at a step are predicted by the head; the first entries of `orders` stay masked
    the longest; CFG ramps linearly with the share generated."""
    b, n = orders.shape
    d = c["token_dim"]
    tokens = torch.zeros(b, n, d)
    unknown = torch.ones(b, n, dtype=torch.bool)
    for step in range(num_iter):
        cls = w["class_emb.weight"][labels]
        zz = backbone(c, w, torch.cat([tokens, tokens]), torch.cat([unknown, unknown]),
                      torch.cat([cls, w["fake_latent"].expand(b, -1)])) if cfg != 1.0 else \
            backbone(c, w, tokens, unknown, cls)
        mask_len = math.floor(n * math.cos(math.pi / 2 * (step + 1) / num_iter))
        mask_len = max(1, min(int(unknown[0].sum()) - 1, mask_len))
        nxt = torch.zeros(b, n, dtype=torch.bool)
        for i in range(b):
            nxt[i, orders[i, :mask_len]] = True
        to_pred = unknown.clone() if step >= num_iter - 1 else unknown ^ nxt
        ramp = 1 + (cfg - 1) * (n - mask_len) / n
        rows = to_pred.nonzero(as_tuple=True)
        z = zz[:b][rows]
        if cfg != 1.0:
            z = torch.cat([z, zz[b:][rows]])
        new = sample_tokens(c, w, z, ramp if cfg != 1.0 else 1.0, temperature,
                            x_T[rows], noise[rows])
        tokens = tokens.clone()
        tokens[rows] = new
        unknown = nxt
    return tokens


# ---- the KL-16 VAE's decoder (LDM's AutoencoderKL in models/vae.py) ----

SMALL_VAE = {"embed_dim": 16, "ch": 32, "ch_mult": [1, 1, 2, 2, 4], "num_res_blocks": 2}


def vae_layout(v):
    """The checkpoint's names: encoder (unused by a picture, still in the file), quant convs,
    decoder, and a loss network as the released kl16.ckpt carries (ignored by MAR's loader)."""
    t, ch, mult, e = {}, v["ch"], v["ch_mult"], v["embed_dim"]

    def conv(n, cin, cout, k):
        t[n + ".weight"], t[n + ".bias"] = (cout, cin, k, k), (cout,)

    def norm(n, c):
        t[n + ".weight"], t[n + ".bias"] = (c,), (c,)

    def res(p, cin, cout):
        norm(p + ".norm1", cin)
        conv(p + ".conv1", cin, cout, 3)
        norm(p + ".norm2", cout)
        conv(p + ".conv2", cout, cout, 3)
        if cin != cout:
            conv(p + ".nin_shortcut", cin, cout, 1)

    def attn(p, c):
        norm(p + ".norm", c)
        for n in ("q", "k", "v", "proj_out"):
            conv(f"{p}.{n}", c, c, 1)

    conv("encoder.conv_in", 3, ch, 3)  # a token of the encoder's presence; its shape is not read
    conv("quant_conv", 2 * e, 2 * e, 1)
    conv("post_quant_conv", e, e, 1)
    top = ch * mult[-1]
    conv("decoder.conv_in", e, top, 3)
    res("decoder.mid.block_1", top, top)
    attn("decoder.mid.attn_1", top)
    res("decoder.mid.block_2", top, top)
    cin = top
    for level in reversed(range(len(mult))):
        cout = ch * mult[level]
        for j in range(v["num_res_blocks"] + 1):
            res(f"decoder.up.{level}.block.{j}", cin, cout)
            cin = cout
        if level != 0:
            conv(f"decoder.up.{level}.upsample.conv", cout, cout, 3)
    norm("decoder.norm_out", cin)
    conv("decoder.conv_out", cin, 3, 3)
    conv("loss.discriminator.main.0", 3, 8, 4)
    return t


def vae_init(shapes, gen):
    out = {}
    for name, shape in shapes.items():
        if len(shape) == 4:
            out[name] = torch.randn(shape, generator=gen) / math.sqrt(shape[1] * shape[2] * shape[3])
        elif name.endswith("weight"):
            out[name] = 1 + 0.1 * torch.randn(shape, generator=gen)
        else:
            out[name] = 0.1 * torch.randn(shape, generator=gen)
    return out


def vae_decode(v, w, tokens, h, wd):
    """tokens [B, h*w, D] -> pixels [B, 3, 16h, 16w]: / 0.2325, post_quant_conv, LDM's decoder."""
    b = tokens.shape[0]
    conv = lambda x, n, pad: torch.nn.functional.conv2d(x, w[n + ".weight"], w[n + ".bias"], padding=pad)  # noqa: E731
    gn = lambda x, n: torch.nn.functional.group_norm(x, 32, w[n + ".weight"], w[n + ".bias"], 1e-6)  # noqa: E731
    swish = lambda x: x * torch.sigmoid(x)  # noqa: E731

    def res(x, p):
        hh = conv(swish(gn(x, p + ".norm1")), p + ".conv1", 1)
        hh = conv(swish(gn(hh, p + ".norm2")), p + ".conv2", 1)
        return (conv(x, p + ".nin_shortcut", 0) if p + ".nin_shortcut.weight" in w else x) + hh

    def attn(x, p):
        n = gn(x, p + ".norm")
        q, k, val = (conv(n, f"{p}.{m}", 0).flatten(2) for m in ("q", "k", "v"))
        a = torch.softmax(q.transpose(1, 2) @ k / math.sqrt(x.shape[1]), dim=-1)  # [b, query, key]
        return x + conv((val @ a.transpose(1, 2)).reshape(x.shape), p + ".proj_out", 0)

    z = (tokens / 0.2325).reshape(b, h, wd, -1).permute(0, 3, 1, 2)
    x = conv(conv(z, "post_quant_conv", 0), "decoder.conv_in", 1)
    x = res(attn(res(x, "decoder.mid.block_1"), "decoder.mid.attn_1"), "decoder.mid.block_2")
    for level in reversed(range(len(v["ch_mult"]))):
        for j in range(v["num_res_blocks"] + 1):
            x = res(x, f"decoder.up.{level}.block.{j}")
        if level != 0:
            x = conv(torch.nn.functional.interpolate(x, scale_factor=2.0, mode="nearest"),
                     f"decoder.up.{level}.upsample.conv", 1)
    return conv(swish(gn(x, "decoder.norm_out")), "decoder.conv_out", 1)


def checkpoint(c, gen, args):
    shapes = layout(c)
    ema, raw = init(shapes, gen), init(shapes, gen)
    names = sorted(raw)
    optimizer = {"state": {i: {"step": torch.tensor(400.0), "exp_avg": torch.zeros_like(raw[n]),
                               "exp_avg_sq": torch.zeros_like(raw[n])} for i, n in enumerate(names[:3])},
                 "param_groups": [{"lr": 8e-4, "betas": (0.9, 0.95), "eps": 1e-8, "weight_decay": 0.02,
                                   "amsgrad": False, "foreach": None, "maximize": False,
                                   "capturable": False, "differentiable": False, "fused": None,
                                   "params": list(range(len(names)))}]}
    scaler = {"scale": 65536.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 2000,
              "_growth_tracker": 7}
    return ema, {"model": raw, "model_ema": ema, "optimizer": optimizer, "epoch": 399,
                 "scaler": scaler, "args": args}


def namespace(c, model):
    return argparse.Namespace(model=model, img_size=c["grid"] * 16, vae_path="pretrained_models/vae/kl16.ckpt",
                              vae_embed_dim=c["token_dim"], vae_stride=16, patch_size=1,
                              num_iter=64, num_images=50000, cfg=1.0, cfg_schedule="linear",
                              label_drop_prob=0.1, class_num=c["num_classes"], attn_dropout=0.1,
                              proj_dropout=0.1, buffer_size=c["buffer_size"],
                              diffloss_d=c["head_blocks"], diffloss_w=c["head_width"],
                              num_sampling_steps=str(c["sample_steps"]), diffusion_batch_mul=4,
                              temperature=1.0, grad_checkpointing=False, ema_rate=0.9999, epochs=400)


def outputs(c, ema, gen, out):
    """reference.safetensors, kl16.ckpt (the small VAE) and meta.json for the model `ema`."""
    b, n, d, k = 2, c["grid"] ** 2, c["token_dim"], c["sample_steps"]
    labels = torch.tensor([3, 7])
    tokens = torch.randn(b, n, d, generator=gen)
    unknown = torch.rand(b, n, generator=gen) < 0.5
    unknown[1] = unknown[0].roll(3)  # the same count per row, in other places
    with torch.no_grad():
        z = backbone(c, ema, tokens, unknown, ema["class_emb.weight"][labels])
        orders = torch.stack([torch.randperm(n, generator=gen) for _ in range(b)])
        x_T = torch.randn(b, n, d, generator=gen)
        noise = torch.randn(b, n, k, d, generator=gen)
        sampled = generate(c, ema, labels, orders, x_T, noise, num_iter=4, cfg=3.0, temperature=0.9)
    vae = vae_init(vae_layout(SMALL_VAE), gen)
    torch.save({"model": vae}, out / "kl16.ckpt")
    # The decoder on tokens of a realistic size (the sampled ones are tens of thousands).
    vae_tokens = 0.3 * torch.randn(b, n, d, generator=gen)
    with torch.no_grad():
        pixels = vae_decode(SMALL_VAE, vae, vae_tokens, c["grid"], c["grid"])
    write_safetensors(out / "reference.safetensors",
                      {"labels": labels, "tokens": tokens, "unknown": unknown.to(torch.uint8), "z": z,
                       "orders": orders, "x_T": x_T, "noise": noise, "sampled": sampled,
                       "vae_tokens": vae_tokens, "pixels": pixels}, {})
    (out / "meta.json").write_text(json.dumps({"config": c, "num_iter": 4, "cfg": 3.0,
                                               "temperature": 0.9,
                                               "parameters": sum(t.numel() for t in ema.values())},
                                              indent=1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shapes", choices=sorted(RELEASED))
    ap.add_argument("--outputs", action="store_true",
                    help="with --shapes: also the reference outputs (by hand: against_mar.py, "
                         "ADTREE_MAR_FIXTURE=DIR test_mar)")
    a = ap.parse_args()
    torch.set_num_threads(1)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    gen = torch.Generator().manual_seed(a.seed)
    if a.shapes:
        dim, depth, heads, hw, hb, model = RELEASED[a.shapes]
        c = {"grid": 16, "token_dim": 16, "encoder_dim": dim, "encoder_depth": depth,
             "encoder_heads": heads, "decoder_dim": dim, "decoder_depth": depth,
             "decoder_heads": heads, "buffer_size": 64, "num_classes": 1000, "head_width": hw,
             "head_blocks": hb, "sample_steps": 100, "model": model}
        ema, ckpt = checkpoint(c, gen, namespace(c, model))
        del ckpt["model"], ckpt["optimizer"]  # halves the file: the converter reads model_ema
        torch.save(ckpt, out / "checkpoint-last.pth")
        if a.outputs:  # the small model's outputs at this shape (about a minute for B)
            outputs(c, ema, gen, out)
            return
        params = sum(t.numel() for t in ema.values())
        (out / "meta.json").write_text(json.dumps({"config": c, "parameters": params}, indent=1))
        return
    c = SMALL
    ema, ckpt = checkpoint(c, gen, namespace(c, c["model"]))
    torch.save(ckpt, out / "checkpoint-last.pth")
    outputs(c, ema, gen, out)


if __name__ == "__main__":
    main()
