#!/usr/bin/env python3
"""Independent T5 v1.1 / FLAN-T5 encoder reference and fixture maker for the C++ parity test.

Why: LlamaGen's t2i models are conditioned on FLAN-T5-XL's encoder output, so a C++ T5 encoder and
SentencePiece tokenizer must match Hugging Face's in every detail: no 1/sqrt(d_kv) score scaling,
bidirectional relative-position buckets computed once (block 0) and shared by all blocks, the
padding mask added to the scores, RMS norm without mean or bias (variance in fp32), gated GELU with
the tanh approximation, no biases, unscaled embeddings, a final norm. This file computes the
encoder a second time, written only from the published definitions (Raffel et al. 2020 and the
T5 v1.1 changes), not from core/ nor from transformers (not installed here), so a shared misreading
is the only way both sides can agree on a wrong answer. fp32 on one CPU thread; a seed gives the
same bytes on every run (the SentencePiece trainer runs single-threaded with a fixed seed).

How:
  reference.py --out DIR [--seed 0] [--shape small|wide]
writes
  DIR/t5/config.json, DIR/t5/model.safetensors, DIR/t5/spiece.model   a random encoder in the
      Hugging Face layout (F32; a few decoder tensors and lm_head that a loader must skip) and a
      small unigram tokenizer with T5's special ids (pad 0, eos 1, unk 2, no bos);
  DIR/reference.safetensors   input_ids [2, 12] I64 (row 0: 11 random pieces + eos; row 1: 6 +
      eos, right-padded with 0), attention_mask [2, 12] I64, hidden [2, 12, d_model] F32 (the
      last hidden state after the final norm, padded positions included: padded queries still
      attend to the real keys), position_buckets [401] I64 (the bucket of key - query = -200..200;
      12 tokens never reach the logarithmic buckets, so a loader's bucket function is checked here);
  DIR/tokens.json   "raw": {prompt, pieces, ids} with ids = sp.encode(prompt) of the prompt as
      given (no lower-casing, no eos: the C++ side adds eos and LlamaGen's cleaning separately);
      "llamagen": {prompt, text, ids, mask_len} as tools/t5_embed.py prepares a caption: text =
      " ".join(prompt.lower().split()), ids = its pieces + eos, truncated as HF does to at most 120
      ids (the first 119 pieces, then eos);
  DIR/meta.json   shape, seed, config, piece count, the fp32-vs-fp64 gap, self-checks, files.

Shapes: small d_model 32, 4 heads x d_kv 8, d_ff 48, 2 layers; wide d_model 48, 4 heads x d_kv 16
(inner 64 != d_model on purpose), d_ff 80, 3 layers. Matrices are drawn with std 1/sqrt(fan_in),
not T5's tiny init, embeddings and the relative bias with std 1, norm weights 1 + 0.1 N(0, 1), so
that attention is far from uniform: meta.json "self_check" records how far a scaled score, an erf
GELU or a dropped mask would move the output (all far above a 1e-4 tolerance).
"""
import argparse
import io
import json
import math
import sys
import tempfile
from pathlib import Path

import torch

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from convert_llamagen import write_safetensors  # noqa: E402  (file IO only, no model code)

SHAPES = {"small": {"d_model": 32, "d_kv": 8, "num_heads": 4, "d_ff": 48, "num_layers": 2},
          "wide": {"d_model": 48, "d_kv": 16, "num_heads": 4, "d_ff": 80, "num_layers": 3}}
NUM_BUCKETS, MAX_DISTANCE, EPS = 32, 128, 1e-6
PAD, EOS, UNK = 0, 1, 2
SEQ_LEN, SHORT_LEN = 12, 7      # reference rows: a full one, and 7 ids right-padded to 12
EXTRA_VOCAB = 28                # config vocab_size = pieces + 28, as real T5 (32128 vs 32000)
CAPTION_LEN = 120               # LlamaGen's caption slots (t5_embed.py --max-length)
BUCKET_RANGE = 200              # position_buckets covers key - query = -200 .. 200

# Training text for the toy tokenizer: captions, both cases of every letter, digits, punctuation
# and a few non-ASCII words, so the prompts below meet <unk> only where meant to: 🙂, Ω, ω and €
# are unknown, and SentencePiece merges a run of unknown characters into one <unk> (🙂🙂Ω).
CORPUS = """a red double-decker bus on a rainy street in london
a photo of a cat sitting on a wooden table next to a cup of coffee
an astronaut riding a horse on the moon, digital art
a bowl of fruit with apples, oranges and bananas
the eiffel tower at night with bright lights
two dogs playing in the snow near a small house
a painting of a mountain lake at sunrise in the style of van gogh
a close-up photo of a sunflower under a blue sky
a city skyline with tall buildings and a river at sunset
a little girl reading a book in a library full of old books
a bird flying over the ocean while the waves crash on the rocks
a bicycle leaning against a brick wall in the morning light
three cats, two dogs & one bird.
numbers: 0 1 2 3 4 5 6 7 8 9 10 12 50 100 2024 3.14 12.50
punctuation: hello, world! what? yes; no: (maybe) [ok] {fine} "quoted" 'single'
more signs: - _ / @ # $ % + = * ~ < > | \\ ^ `
café au lait, naïve über straße, crème brûlée, piñata, résumé, 日本 東京, 北京
The Quick Brown Fox Jumps Over The Lazy Dog
THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG
the quick brown fox jumps over the lazy dog, a jolly emoji
A Photo Of The Eiffel Tower At Night
hello hello hello world, spaces everywhere and tabs everywhere
a cozy kitchen with a wooden floor, green plants and a window
a futuristic robot walking through a busy market in tokyo
an oil painting of a ship in a storm on the sea
a yellow taxi parked in front of a red door""".split("\n")

LONG = ("A very long caption that describes a Busy Market Square in the morning, with red and "
        "yellow umbrellas, wooden tables full of apples, oranges, bananas and flowers, two dogs "
        "playing near a bicycle, an old man reading a book, a little girl holding a cup of "
        "coffee, tall buildings with bright windows, a river with a small ship, birds flying over "
        "the rocks, a mountain lake far away under a blue sky, and the sun rising over the city "
        "in the style of an oil painting, digital art, 2024.")
PROMPTS = ["a red double-decker bus", "Café au lait!", "naïve über 日本", "3 cats, 2 dogs & 1 bird.",
           "  spaces   everywhere  ", "", "A Photo of THE Eiffel Tower at Night",
           "hello hello hello hello", "tabs\tand\nnewlines", "emoji 🙂 and Ω, or 🙂🙂Ω together",
           "Price: $12.50 (about 11€) - 50% off?", "ＦＵＬＬＷＩＤＴＨ １２３",
           "nai\u0308ve", LONG]  # NFKC folds fullwidth to ASCII, i + U+0308 to ï


# ---- tokenizer -----------------------------------------------------------------------------------

def train_tokenizer(path, seed):
    """Trains a unigram SentencePiece model with T5's special ids, writes it to `path`."""
    try:
        import sentencepiece as spm
    except ImportError:
        sys.exit("reference.py: error: the sentencepiece module is missing "
                 "(apt-get install -y python3-sentencepiece)")
    spm.set_random_generator_seed(seed)
    model = io.BytesIO()
    # In-memory text and model: a file path would be recorded in the model's trainer_spec and make
    # the bytes differ between runs. Soft limit: the trainer keeps as many pieces (up to 256) as
    # this small corpus supports. T5's normalizer (nmt_nfkc, dummy prefix, extra whitespace
    # removed) is the trainer default. The trainer's log goes to a discarded temporary file.
    with tempfile.TemporaryFile("w") as log:
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(CORPUS), model_writer=model, model_type="unigram",
            vocab_size=256, hard_vocab_limit=False, character_coverage=1.0, num_threads=1,
            pad_id=PAD, eos_id=EOS, unk_id=UNK, bos_id=-1, shuffle_input_sentence=False,
            logstream=log)
    path.write_bytes(model.getvalue())
    return spm.SentencePieceProcessor(model_file=str(path))


def token_fixture(sp):
    raw = [{"prompt": p, "pieces": sp.encode(p, out_type=str), "ids": sp.encode(p, out_type=int)}
           for p in PROMPTS]
    llamagen = []
    for p in PROMPTS:
        text = " ".join(p.lower().split())  # tools/t5_embed.py clean()
        ids = sp.encode(text, out_type=int)[:CAPTION_LEN - 1] + [EOS]  # HF: truncate, then eos
        llamagen.append({"prompt": p, "text": text, "ids": ids, "mask_len": len(ids)})
    if len(sp.encode(" ".join(LONG.lower().split()))) <= CAPTION_LEN:
        raise AssertionError("the long prompt no longer exceeds 120 pieces: lengthen LONG")
    return {"max_length": CAPTION_LEN, "eos_id": EOS, "raw": raw, "llamagen": llamagen}


# ---- weights -------------------------------------------------------------------------------------

def layout(c):
    """HF T5 tensor names -> (shape, init): 'embed', 'norm', 'bias' (relative) or a fan-in."""
    d, inner, ff = c["d_model"], c["num_heads"] * c["d_kv"], c["d_ff"]
    s = {"shared.weight": ((c["vocab_size"], d), "embed")}
    for i in range(c["num_layers"]):
        p = f"encoder.block.{i}.layer."
        for n in "qkv":
            s[f"{p}0.SelfAttention.{n}.weight"] = ((inner, d), d)
        s[p + "0.SelfAttention.o.weight"] = ((d, inner), inner)
        if i == 0:  # only block 0 owns the bias table; HF shares its output with later blocks
            s[p + "0.SelfAttention.relative_attention_bias.weight"] = \
                ((c["relative_attention_num_buckets"], c["num_heads"]), "bias")
        s[p + "0.layer_norm.weight"] = ((d,), "norm")
        s[p + "1.DenseReluDense.wi_0.weight"] = ((ff, d), d)
        s[p + "1.DenseReluDense.wi_1.weight"] = ((ff, d), d)
        s[p + "1.DenseReluDense.wo.weight"] = ((d, ff), ff)
        s[p + "1.layer_norm.weight"] = ((d,), "norm")
    s["encoder.final_layer_norm.weight"] = ((d,), "norm")
    # Decoder and head tensors the encoder does not use: a loader must skip them.
    s["decoder.block.0.layer.0.SelfAttention.q.weight"] = ((inner, d), d)
    s["decoder.final_layer_norm.weight"] = ((d,), "norm")
    s["lm_head.weight"] = ((c["vocab_size"], d), d)
    return s


def init(lay, gen):
    out = {}
    for name, (shape, kind) in lay.items():
        t = torch.randn(shape, generator=gen)
        out[name] = 1 + 0.1 * t if kind == "norm" else t if kind in ("embed", "bias") else \
            t / math.sqrt(kind)
    return out


def hf_config(c):
    return dict(c, model_type="t5", architectures=["T5ForConditionalGeneration"],
                layer_norm_epsilon=EPS, feed_forward_proj="gated-gelu", dense_act_fn="gelu_new",
                is_gated_act=True, pad_token_id=PAD, eos_token_id=EOS, decoder_start_token_id=PAD,
                tie_word_embeddings=False, num_decoder_layers=c["num_layers"],
                is_encoder_decoder=True, dropout_rate=0.1, torch_dtype="float32")


# ---- encoder math --------------------------------------------------------------------------------

def rms_norm(x, w):
    """T5 layer norm: no mean subtraction, no bias; variance in fp32 (fp64 in the fp64 run)."""
    acc = torch.float64 if x.dtype == torch.float64 else torch.float32
    var = x.to(acc).pow(2).mean(-1, keepdim=True)
    return w * (x * torch.rsqrt(var + EPS)).to(x.dtype)


def gelu_new(x):
    """GELU with the tanh approximation (HF "gelu_new")."""
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x.pow(3))))


def gelu_erf(x):  # the wrong GELU, only to measure how much the choice matters
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))


def relative_buckets(rel, num_buckets=NUM_BUCKETS, max_distance=MAX_DISTANCE):
    """Bidirectional T5 bucket of rel = key - query: half the buckets for keys after the query;
    in each half, exact buckets for |rel| < 8, then logarithmic up to max_distance, then the last.
    The logarithm is taken in fp32 and truncated, as HF does; at the exact powers |rel| = 16, 32,
    64 this gives 10, 12, 14, as exact arithmetic does (position_buckets records them all)."""
    half = num_buckets // 2
    exact = half // 2
    n = rel.abs()
    log_part = torch.log(n.clamp(min=1).float() / exact) / math.log(max_distance / exact)
    large = (exact + (log_part * (half - exact)).long()).clamp(max=half - 1)
    return (rel > 0).long() * half + torch.where(n < exact, n, large)


def position_bias(table, length):
    """[heads, query, key] from the block-0 table [buckets, heads]."""
    pos = torch.arange(length)
    return table[relative_buckets(pos[None, :] - pos[:, None])].permute(2, 0, 1)


def self_attention(x, w, p, c, bias, scale):
    B, L, _ = x.shape
    H, dk = c["num_heads"], c["d_kv"]

    def heads(n):
        return (x @ w[f"{p}{n}.weight"].t()).view(B, L, H, dk).transpose(1, 2)

    q, k, v = heads("q"), heads("k"), heads("v")
    scores = q @ k.transpose(-1, -2) * scale + bias  # T5: scale is 1, no 1/sqrt(d_kv)
    out = (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, L, H * dk)
    return out @ w[p + "o.weight"].t()


def encode(w, c, ids, mask, dtype, scale=1.0, act=gelu_new, use_mask=True):
    """Encoder last hidden state [B, L, d_model] in `dtype` (variants only for the self-check)."""
    w = {k: v.to(dtype) for k, v in w.items()}
    h = w["shared.weight"][ids]  # T5 does not scale embeddings
    bias = position_bias(w["encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"],
                         ids.shape[1])[None]
    if use_mask:  # HF: (1 - mask) * finfo.min added to every padded key's score
        bias = bias + (1 - mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min
    for i in range(c["num_layers"]):
        p = f"encoder.block.{i}.layer."
        h = h + self_attention(rms_norm(h, w[p + "0.layer_norm.weight"]), w,
                               p + "0.SelfAttention.", c, bias, scale)
        f = rms_norm(h, w[p + "1.layer_norm.weight"])
        g = act(f @ w[p + "1.DenseReluDense.wi_0.weight"].t()) * \
            (f @ w[p + "1.DenseReluDense.wi_1.weight"].t())
        h = h + g @ w[p + "1.DenseReluDense.wo.weight"].t()
    return rms_norm(h, w["encoder.final_layer_norm.weight"])


def max_diff(a, b):
    return float((a.double() - b.double()).abs().max())


# ---- fixtures ------------------------------------------------------------------------------------

def make(out, shape, seed):
    gen = torch.Generator().manual_seed(seed)
    (out / "t5").mkdir(parents=True, exist_ok=True)
    sp = train_tokenizer(out / "t5" / "spiece.model", seed)
    pieces = sp.get_piece_size()
    c = dict(SHAPES[shape], vocab_size=pieces + EXTRA_VOCAB,
             relative_attention_num_buckets=NUM_BUCKETS,
             relative_attention_max_distance=MAX_DISTANCE)
    config = hf_config(c)
    (out / "t5" / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    w = init(layout(c), gen)
    write_safetensors(out / "t5" / "model.safetensors", w, {"format": "pt"})

    # Row 0: 11 random real pieces + eos; row 1: 6 + eos, then pad. Ids 0-2 are special.
    ids = torch.full((2, SEQ_LEN), PAD, dtype=torch.long)
    ids[0, :-1] = torch.randint(3, pieces, (SEQ_LEN - 1,), generator=gen)
    ids[1, :SHORT_LEN - 1] = torch.randint(3, pieces, (SHORT_LEN - 1,), generator=gen)
    ids[0, -1] = ids[1, SHORT_LEN - 1] = EOS
    mask = (torch.arange(SEQ_LEN)[None] < torch.tensor([[SEQ_LEN], [SHORT_LEN]])).long()

    hidden = encode(w, c, ids, mask, torch.float32)
    hidden64 = encode(w, c, ids, mask, torch.float64)
    if not torch.isfinite(hidden).all():
        raise AssertionError("the fp32 encoder output is not finite")
    gap = max_diff(hidden, hidden64)
    if gap > 1e-4:
        raise AssertionError(f"fp32 and fp64 outputs differ by {gap}: the fixture is too fragile")
    alone = encode(w, c, ids[1:, :SHORT_LEN], mask[1:, :SHORT_LEN], torch.float64)[0]
    trim_diff = max_diff(hidden64[1][:SHORT_LEN], alone)
    if trim_diff > 1e-9:
        raise AssertionError(f"row 1 with padding differs from row 1 alone by {trim_diff}")
    self_check = {
        "fp32_vs_fp64_max_abs_diff": gap,
        "hidden_max_abs": float(hidden.abs().max()),
        "padded_row_vs_unpadded_alone_fp64": trim_diff,
        # What a wrong port would change (max abs over the real positions; want >> 1e-4):
        "change_if_mask_ignored": max_diff(
            encode(w, c, ids, mask, torch.float64, use_mask=False)[1, :SHORT_LEN],
            hidden64[1, :SHORT_LEN]),
        "change_if_scores_scaled_by_1/sqrt(d_kv)": max_diff(
            encode(w, c, ids, mask, torch.float64, scale=c["d_kv"] ** -0.5)[0], hidden64[0]),
        "change_if_erf_gelu": max_diff(
            encode(w, c, ids, mask, torch.float64, act=gelu_erf)[0], hidden64[0])}

    rel = torch.arange(-BUCKET_RANGE, BUCKET_RANGE + 1)
    ref = {"input_ids": ids, "attention_mask": mask, "hidden": hidden.contiguous(),
           "position_buckets": relative_buckets(rel)}
    write_safetensors(out / "reference.safetensors", ref,
                      {"shape": shape, "seed": str(seed),
                       "position_buckets": f"key - query = -{BUCKET_RANGE} .. {BUCKET_RANGE}"})
    tokens = token_fixture(sp)
    (out / "tokens.json").write_text(json.dumps(tokens, indent=1, ensure_ascii=False) + "\n",
                                     encoding="utf-8")
    meta = {"shape": shape, "seed": seed, "config": config, "pieces": pieces,
            "vocab_size": c["vocab_size"], "seq_len": SEQ_LEN, "short_row_len": SHORT_LEN,
            "fp32_vs_fp64_max_abs_diff": gap, "self_check": self_check,
            "tokenizer": {"model_type": "unigram", "pad_id": PAD, "eos_id": EOS, "unk_id": UNK,
                          "bos_id": -1, "normalizer": "nmt_nfkc (trainer default, as T5)"}}
    meta["files"] = sorted({str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()} |
                           {"meta.json"})
    return meta


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="directory to write (created)")
    ap.add_argument("--seed", type=int, default=0, help="seed of every random draw (default 0)")
    ap.add_argument("--shape", choices=sorted(SHAPES), default="small",
                    help="encoder size (default small)")
    opts = ap.parse_args()
    torch.set_num_threads(1)
    out = Path(opts.out)
    out.mkdir(parents=True, exist_ok=True)
    meta = make(out, opts.shape, opts.seed)
    (out / "meta.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {out}: " + ", ".join(meta["files"]) +
          f"; {meta['pieces']} pieces, fp32 vs fp64 {meta['fp32_vs_fp64_max_abs_diff']:.2e}")


if __name__ == "__main__":
    main()
