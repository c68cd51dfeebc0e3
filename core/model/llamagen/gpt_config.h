// Configuration of the LlamaGen GPT (target transformer). Any size, tiny to XL, comes from here.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>

namespace adtree::model {

enum class CondKind {
  Class,    // c2i: class-embedding table [num_classes + 1, dim]; C = 1
  Caption,  // t2i: caption vectors [C, cap_dim] through cap_proj, with a padding mask
};

struct GptConfig {
  int64_t dim = 384;
  int64_t n_layer = 8;
  int64_t n_head = 6;
  int64_t vocab_size = 1024;  // = VQ codebook size
  int64_t grid_h = 16;
  int64_t grid_w = 16;
  CondKind cond = CondKind::Caption;
  int64_t num_classes = 1000;  // Class only
  int64_t cap_dim = 2048;      // Caption only: width of a caption vector (FLAN-T5-XL: 2048)
  int64_t cond_len = 120;      // Caption only: C condition tokens (Class: always 1)
  int64_t num_words = 0;       // Caption only: > 0 means a word-embedding table feeds cap_proj
  int64_t multiple_of = 256;   // FFN hidden size rounds up to this
  double norm_eps = 1e-5;
  double rope_base = 10000.0;

  int64_t head_dim() const { return dim / n_head; }
  int64_t ffn_hidden() const;  // int(8 * dim / 3) rounded up to multiple_of
  int64_t cond_tokens() const { return cond == CondKind::Class ? 1 : cond_len; }
  int64_t image_tokens() const { return grid_h * grid_w; }
  int64_t seq_len() const { return cond_tokens() + image_tokens(); }  // max positions used
  void validate() const;  // throws adtree::Error naming the bad field
  nlohmann::json to_json() const;
  static GptConfig from_json(const nlohmann::json& j);
  // Named sizes: "tiny" (256x8), "small" (384x8), "B", "L", "XL" (LLAMAGEN.md configs).
  static GptConfig preset(const std::string& name);
};

std::string to_string(CondKind k);
CondKind cond_kind_from_string(const std::string& s);

}  // namespace adtree::model
