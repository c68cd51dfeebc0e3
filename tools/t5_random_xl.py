#!/usr/bin/env python3
"""Writes a random T5 encoder in FLAN-T5-XL's shape (1.22B parameters, 4.9 GB fp32) in the Hugging
Face layout, to time the C++ text encoder at the real size without the download
(docs/llamagen.md, "What the encoder costs"). The tokenizer is copied from a tiny random T5
(`adtree model random --cond t5` writes one in its t5/ folder).

Usage: /usr/bin/python3 tools/t5_random_xl.py --spiece DIR/t5/spiece.model --out DIR
"""
import argparse
import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from convert_llamagen import write_safetensors  # noqa: E402

import torch  # noqa: E402

D_MODEL, D_KV, D_FF, LAYERS, HEADS, VOCAB = 2048, 64, 5120, 24, 32, 32128


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--spiece", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    a = p.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    shutil.copy(a.spiece, a.out / "spiece.model")
    config = dict(model_type="t5", vocab_size=VOCAB, d_model=D_MODEL, d_kv=D_KV, d_ff=D_FF,
                  num_layers=LAYERS, num_heads=HEADS, relative_attention_num_buckets=32,
                  relative_attention_max_distance=128, layer_norm_epsilon=1e-6,
                  feed_forward_proj="gated-gelu", is_gated_act=True, dense_act_fn="gelu_new",
                  pad_token_id=0, eos_token_id=1, tie_word_embeddings=False)
    (a.out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    g = torch.Generator().manual_seed(0)

    def normal(*shape, std=0.02):
        return torch.randn(*shape, generator=g) * std

    inner = HEADS * D_KV
    t = {"shared.weight": normal(VOCAB, D_MODEL, std=1.0)}
    for i in range(LAYERS):
        b = f"encoder.block.{i}.layer."
        for n in "qkv":
            t[b + f"0.SelfAttention.{n}.weight"] = normal(inner, D_MODEL)
        t[b + "0.SelfAttention.o.weight"] = normal(D_MODEL, inner)
        if i == 0:
            t[b + "0.SelfAttention.relative_attention_bias.weight"] = normal(32, HEADS, std=0.1)
        t[b + "0.layer_norm.weight"] = torch.ones(D_MODEL)
        t[b + "1.DenseReluDense.wi_0.weight"] = normal(D_FF, D_MODEL)
        t[b + "1.DenseReluDense.wi_1.weight"] = normal(D_FF, D_MODEL)
        t[b + "1.DenseReluDense.wo.weight"] = normal(D_MODEL, D_FF)
        t[b + "1.layer_norm.weight"] = torch.ones(D_MODEL)
    t["encoder.final_layer_norm.weight"] = torch.ones(D_MODEL)
    write_safetensors(a.out / "model.safetensors", t, {"format": "pt"})
    print(f"wrote {a.out}: {sum(v.numel() for v in t.values()) / 1e9:.2f}B parameters")
    return 0


if __name__ == "__main__":
    sys.exit(main())
