#!/usr/bin/env python3
"""Encode one prompt with FLAN-T5-XL into the caption-embedding file of a t2i-embeddings model.

Why: LlamaGen's text-to-image models are conditioned on the FLAN-T5-XL encoder output (120 x 2048),
a 3B-parameter encoder the app does not run. This helper runs it once per prompt (LlamaGen users
already have the weights, e.g. pretrained_models/t5-ckpt/flan-t5-xl) and writes what the app reads:

  caption_embedding  F32 [max_length, 2048]  encoder output (rows past the prompt are padding)
  caption_mask       I64 [max_length]        1 for the prompt's tokens (and the closing </s>),
                                             then 0
  __metadata__       prompt, encoder, max_length, tokens, t5_dtype

The mask is right-padded, as the tokenizer returns it; the app applies LlamaGen's left padding
(valid rows moved to the end, padded rows zeroed) itself. The prompt is lower-cased and its spaces
collapsed; LlamaGen's longer caption cleaning (ftfy, BeautifulSoup) is not repeated, so prompts with
URLs, HTML or odd punctuation may tokenize slightly differently from LlamaGen's own sampler.

How:
  t5_embed.py --t5-path DIR --prompt "a red double-decker bus" --out bus.safetensors
  t5_embed.py --fake-encoder --prompt "a red bus" --out bus.safetensors   (tests: no transformers)
Needs torch, plus `transformers` and `sentencepiece` unless --fake-encoder; they are imported only
when used. Errors are one line on stderr and exit status 2.
"""
import argparse
import hashlib
import sys
from pathlib import Path

import torch

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
from convert_llamagen import write_safetensors  # noqa: E402

T5_DIM = 2048  # FLAN-T5-XL d_model
DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32}


class EmbedError(Exception):
    """A problem with the user's input: reported as one line, exit status 2."""


def clean(prompt):
    return " ".join(prompt.lower().split())


def t5_encode(text, opts):
    """Runs the real tokenizer and encoder from the local directory --t5-path."""
    if not opts.t5_path:
        raise EmbedError("--t5-path is required (a local google/flan-t5-xl directory), or use "
                         "--fake-encoder for tests")
    if not Path(opts.t5_path).is_dir():
        raise EmbedError(f"--t5-path {opts.t5_path}: directory not found")
    try:
        from transformers import AutoTokenizer, T5EncoderModel
    except ImportError:
        raise EmbedError("the 'transformers' package is needed to run FLAN-T5 (pip install "
                         "transformers sentencepiece); --fake-encoder writes a test file "
                         "without it") from None
    try:
        tokenizer = AutoTokenizer.from_pretrained(opts.t5_path, local_files_only=True)
        encoder = T5EncoderModel.from_pretrained(opts.t5_path, torch_dtype=DTYPES[opts.t5_dtype],
                                                 local_files_only=True).to(opts.device).eval()
    except (OSError, ValueError) as e:
        raise EmbedError(f"--t5-path {opts.t5_path}: cannot load FLAN-T5 from it "
                         f"({str(e).splitlines()[0]})") from None
    if encoder.config.d_model != T5_DIM:
        raise EmbedError(f"--t5-path {opts.t5_path}: d_model {encoder.config.d_model}, LlamaGen "
                         f"needs {T5_DIM} (google/flan-t5-xl)")
    tokens = tokenizer(text, max_length=opts.max_length, padding="max_length", truncation=True,
                       return_attention_mask=True, add_special_tokens=True, return_tensors="pt")
    mask = tokens["attention_mask"].to(opts.device)
    with torch.no_grad():
        out = encoder(input_ids=tokens["input_ids"].to(opts.device), attention_mask=mask)
    return out.last_hidden_state[0].float().cpu(), mask[0].long().cpu()


def fake_encode(text, max_length):
    """Deterministic stand-in: one pseudo-random row per word (seeded by the word's sha256) and an
    end-of-text row, then zero padding. Only for testing the file path."""
    words = text.split()[:max_length - 1] + ["</s>"]
    emb = torch.zeros(max_length, T5_DIM)
    for i, word in enumerate(words):
        seed = int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "little")
        emb[i] = 0.1 * torch.randn(T5_DIM, generator=torch.Generator().manual_seed(seed))
    mask = (torch.arange(max_length) < len(words)).long()
    return emb, mask


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Write one prompt's FLAN-T5-XL encoder output as the caption-embedding file "
                    "of a LlamaGen t2i model (caption_embedding F32 [120, 2048], caption_mask I64 "
                    "[120], right padded).",
        epilog="--t5-path is a local copy of google/flan-t5-xl (config.json, weights, spiece.model "
               "or tokenizer.json), as LlamaGen's sampler uses; nothing is downloaded. Needs the "
               "'transformers' and 'sentencepiece' packages unless --fake-encoder.")
    ap.add_argument("--prompt", required=True, help="the caption to encode")
    ap.add_argument("--out", required=True, help="file to write (.safetensors)")
    ap.add_argument("--t5-path", help="local google/flan-t5-xl directory")
    ap.add_argument("--max-length", type=int, default=120,
                    help="caption slots, as the model's cond_len (LlamaGen: 120)")
    ap.add_argument("--t5-dtype", choices=sorted(DTYPES), default="bf16",
                    help="encoder precision (LlamaGen's sampler runs T5 in bf16)")
    ap.add_argument("--device", default="cpu", help="torch device for the encoder (cpu, cuda)")
    ap.add_argument("--fake-encoder", action="store_true",
                    help="write a deterministic pseudo-embedding from the words (tests only)")
    opts = ap.parse_args(argv)
    if opts.max_length < 2:
        ap.error("--max-length must be at least 2")
    torch.set_num_threads(1)
    text = clean(opts.prompt)
    try:
        if not text:
            raise EmbedError("the prompt is empty")
        if opts.fake_encoder:
            emb, mask = fake_encode(text, opts.max_length)
            encoder = "fake: sha256-seeded rows per word (tests only)"
        else:
            emb, mask = t5_encode(text, opts)
            encoder = "google/flan-t5-xl"
        out = Path(opts.out)
        if not out.parent.is_dir():
            raise EmbedError(f"--out {out}: directory {out.parent} does not exist")
        write_safetensors(out, {"caption_embedding": emb.contiguous(), "caption_mask": mask},
                          {"prompt": opts.prompt, "encoder": encoder,
                           "max_length": str(opts.max_length), "tokens": str(int(mask.sum())),
                           "t5_dtype": "none" if opts.fake_encoder else opts.t5_dtype})
    except EmbedError as e:
        print(f"t5_embed: error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {out}: {int(mask.sum())} of {opts.max_length} caption tokens ({encoder})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
