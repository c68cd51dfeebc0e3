// A MAR model's shape (issue "MAR checkpoints"; LTH14/mar models/mar.py): a bidirectional MAE
// encoder / decoder of ViT blocks over a 16 x 16 grid of continuous tokens, a 64-slot buffer that
// holds the class embedding, and MAR's diffusion MLP head (model/continuous/diffusion_head.h, the
// same SimpleMLPAdaLN). The released sizes are presets; a converted checkpoint records its own.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>

#include "model/continuous/diffusion_head.h"

namespace adtree::model {

struct MarConfig {
  int64_t grid = 16;       // tokens per side: img_size / vae_stride / patch_size
  int64_t token_dim = 16;  // vae_embed_dim * patch_size^2
  int64_t encoder_dim = 768, encoder_depth = 12, encoder_heads = 12;
  int64_t decoder_dim = 768, decoder_depth = 12, decoder_heads = 12;
  int64_t mlp_ratio = 4;     // the ViT blocks' hidden width is mlp_ratio x dim
  int64_t buffer_size = 64;  // leading slots that carry the class embedding
  int64_t num_classes = 1000;
  double norm_eps = 1e-6;
  int64_t head_width = 1024, head_blocks = 6;  // DiffLoss: diffloss_w, diffloss_d
  int train_steps = 1000;                      // the head's cosine schedule
  int sample_steps = 100;                      // MAR's num_sampling_steps

  int64_t seq_len() const { return grid * grid; }
  DiffusionHeadConfig head() const;  // token_dim, cond_dim = decoder_dim, the width and blocks
  void validate() const;             // throws adtree::Error naming the bad field
  nlohmann::json to_json() const;
  static MarConfig from_json(const nlohmann::json& j);  // missing keys keep the defaults
  // "B", "L", "H": the released shapes (models/mar.py mar_base / mar_large / mar_huge with
  // main_mar.py's diffloss_d and diffloss_w); "tiny" for tests. Throws for another name.
  static MarConfig preset(const std::string& name);
  // The sampling MAR's README evaluates a released shape with (cfg 2.9 / 3.0 / 3.2, linear, T 1)
  // at num_iter 64 (the README's faster setting; 256 for its FID): model.json "sampling". Another
  // shape: no guidance.
  nlohmann::json default_sampling() const;
};

}  // namespace adtree::model
