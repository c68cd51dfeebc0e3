#!/usr/bin/env python3
"""Converts a T5 directory that holds only pytorch_model.bin (or its shards,
pytorch_model-0000i-of-0000n.bin with pytorch_model.bin.index.json) into model.safetensors, the
layout the C++ text encoder reads (core/model/text/text_encoder.h). Keeps the encoder's tensors and the
shared embedding; the decoder and the language-model head are dropped (the encoder of FLAN-T5-XL
alone is 4.9 GB in fp32 instead of 11 GB).

Usage: /usr/bin/python3 tools/t5_to_safetensors.py T5_DIR [--dtype bf16]

Needs Python 3 with torch (Debian: python3-torch). Writes T5_DIR/model.safetensors through a
temporary file, so an interrupted run leaves nothing behind.
"""
import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from convert_llamagen import ConvertError, torch_load, write_safetensors  # noqa: E402

import torch  # noqa: E402


def bin_files(d):
    index = d / "pytorch_model.bin.index.json"
    if index.is_file():
        names = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        return [d / n for n in names]
    single = d / "pytorch_model.bin"
    if single.is_file():
        return [single]
    raise ConvertError(f"{d}: neither pytorch_model.bin nor pytorch_model.bin.index.json")


def encoder_tensors(files):
    out = {}
    for f in files:
        sd = torch_load(f)
        if not isinstance(sd, dict):
            raise ConvertError(f"{f}: not a state dict")
        for name, t in sd.items():
            if name == "shared.weight" or name.startswith("encoder."):
                out[name] = t
    if "shared.weight" not in out and "encoder.embed_tokens.weight" not in out:
        raise ConvertError("no shared.weight or encoder.embed_tokens.weight: not a T5 checkpoint")
    # The encoder's embedding is tied to shared.weight; keep one copy.
    if "shared.weight" in out:
        out.pop("encoder.embed_tokens.weight", None)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("t5_dir", type=Path)
    p.add_argument("--dtype", choices=["keep", "fp32", "bf16"], default="keep",
                   help="store the matrices in this type (default: as in the checkpoint)")
    a = p.parse_args()
    try:
        d = a.t5_dir
        if not (d / "config.json").is_file():
            raise ConvertError(f"{d}: no config.json (not a Hugging Face T5 directory)")
        target = d / "model.safetensors"
        if target.exists():
            raise ConvertError(f"{target} exists already")
        tensors = encoder_tensors(bin_files(d))
        dtype = {"keep": None, "fp32": torch.float32, "bf16": torch.bfloat16}[a.dtype]
        tmp = d / "model.safetensors.partial"
        write_safetensors(tmp, tensors, {"format": "pt", "content": "T5 encoder (t5_to_safetensors)"},
                          dtype)
        os.replace(tmp, target)
        print(f"wrote {target} ({len(tensors)} encoder tensors)")
    except ConvertError as e:
        print(f"t5_to_safetensors: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
