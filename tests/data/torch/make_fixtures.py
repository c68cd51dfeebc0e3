#!/usr/bin/env python3
"""Writes the small torch.save() files that tests/io/test_torch_checkpoint.cpp reads (committed,
so the C++ reader is tested on machines without Python): run with Debian's python3-torch,
  /usr/bin/python3 tests/data/torch/make_fixtures.py
Every tensor's values follow from its name (see the test), so the test needs no other reference.
"""
import argparse
import io
import os
import pickle
import zipfile
from collections import OrderedDict
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent


def state_dict():
    base = torch.arange(8, dtype=torch.float32).reshape(2, 4)
    return OrderedDict([
        ("f32", torch.arange(12, dtype=torch.float32).reshape(3, 4)),
        ("f64", torch.arange(3, dtype=torch.float64) / 4),
        ("f16", torch.arange(6, dtype=torch.float16)),
        ("bf16", torch.arange(6, dtype=torch.bfloat16) - 2),
        ("i64", torch.arange(5, dtype=torch.int64) * -3),
        ("i32", torch.arange(4, dtype=torch.int32)),
        ("u8", torch.arange(250, 256, dtype=torch.uint8)),
        ("flags", torch.tensor([True, False, True])),
        ("base", base),
        ("row1", base[1]),              # a view: storage offset 4, the storage shared with base
        ("col2", base[:, 2]),           # a strided view
        ("t", torch.arange(6, dtype=torch.float32).reshape(2, 3).t()),  # not contiguous
        ("scalar", torch.tensor(3.5)),
        ("empty", torch.zeros(0, 3)),
    ])


class Evil:
    """Pickles as a call of os.system: a reader that runs code would run `touch`."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (os.system, (f"touch {self.path}",))


def evil_zip(path, marker):
    """A zip laid out like torch.save's whose data.pkl calls os.system."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr("evil/data.pkl", pickle.dumps({"model": Evil(marker)}, protocol=2))
        z.writestr("evil/version", "3\n")


def redeflate(src, dst):
    """The same archive re-packed with compression, as a user's zip tool might."""
    with zipfile.ZipFile(src) as a, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as b:
        for info in a.infolist():
            b.writestr(info.filename, a.read(info.filename))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(HERE))
    out = Path(ap.parse_args().out)
    out.mkdir(parents=True, exist_ok=True)
    sd = state_dict()
    torch.save(sd, out / "state_dict.pt")
    torch.save(sd, out / "legacy.pt", _use_new_zipfile_serialization=False)
    redeflate(out / "state_dict.pt", out / "deflated.pt")
    ns = argparse.Namespace(gpt_model="GPT-B", image_size=384, lr=1e-4, flags=[1, 2],
                            name="run 7")
    torch.save({"model": OrderedDict([("module.w", torch.ones(2, 2))]), "optimizer": None,
                "steps": 7, "args": ns}, out / "llamagen_style.pt")
    torch.save({"w": torch.nn.Parameter(torch.arange(4.0))}, out / "parameter.pt")
    torch.save({"steps": 7, "note": "no tensors"}, out / "no_state_dict.pt")
    evil_zip(out / "evil.pt", "/tmp/adtree-evil-pickle-ran")
    for f in sorted(out.glob("*.pt")):
        print(f"{f.name}: {f.stat().st_size} bytes")


if __name__ == "__main__":
    main()
