// A training dataset of captioned images, stored as one safetensors file so training needs nothing
// but the reader it already has: tensors "images" (U8 [N, H, W, 3], RGB), "emoji" (I64 [N]) and
// "split" (U8 [N]); "__metadata__" strings "format" = "adtree-dataset", "version", "captions" and
// "styles" (JSON arrays of N strings) and "info" (JSON object: sources, licences, counts, skips).
// A codes dataset (`adtree data codes`) holds "codes" (I16 [N, h, w], the pictures' VQ codes, with
// "codes_vq" naming the tokenizer that made them) instead of "images": a few MB where the pictures
// are a hundred, small enough to travel to a GPU machine, and all the GPT and draft-head trainers
// read.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace adtree::io {

enum class Split : uint8_t { Train = 0, Validation = 1 };

std::string split_name(Split s);  // "train", "validation"

struct Dataset {
  at::Tensor images;                  // uint8 [N, H, W, 3], RGB, CPU (undefined in a codes dataset)
  at::Tensor codes;                   // int16 [N, h, w] VQ codes (codes datasets only)
  std::string codes_vq;               // fingerprint of the VQ weights that made `codes`
  std::vector<std::string> captions;  // one per image
  // The split unit: images with the same value show the same thing (an emoji and its skin-tone
  // variants, in every style) and always fall on the same side of the split.
  std::vector<int64_t> emoji;
  std::vector<std::string> style;  // "noto", "twemoji", ...
  std::vector<uint8_t> split;      // Split values
  nlohmann::json info = nlohmann::json::object();

  int64_t size() const { return static_cast<int64_t>(captions.size()); }
  bool has_images() const { return images.defined(); }
  // Throws adtree::Error for a codes dataset: `who` (the VQ trainer, the fidelity check) needs the
  // pictures themselves.
  void require_images(const std::string& who) const;
  int64_t count(Split s) const;
  std::vector<int64_t> indices(Split s) const;

  // The rows of one split (or any rows, in the order given); info is kept.
  Dataset subset(Split s) const;
  Dataset select(const std::vector<int64_t>& rows) const;

  // Throws adtree::Error naming `where` and the first inconsistency (counts, shapes, values).
  void validate(const std::string& where) const;

  // load() validates everything; save() validates first, then writes atomically (tmp + rename).
  static Dataset load(const std::string& path);
  void save(const std::string& path) const;
};

}  // namespace adtree::io
