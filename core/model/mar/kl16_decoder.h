// MAR's tokenizer's decoder (issue "MAR checkpoints"): the KL-16 VAE of LTH14/mar models/vae.py,
// LDM's AutoencoderKL (embed_dim 16, ch_mult (1, 1, 2, 2, 4)), of which a picture needs only
// post_quant_conv and the decoder. Read top to bottom:
//   z = tokens / latent_scale (0.2325) as [B, 16, h, w]; z = post_quant_conv(z)
//   h = conv_in(z); mid: res block, attention, res block
//   for each level from the coarsest: num_res_blocks + 1 res blocks, then a nearest 2x upsample and
//     a 3x3 conv (not after the finest)
//   pixels = conv_out(swish(group_norm(h)))             [B, 3, 16 h, 16 w], about [-1, 1]
// A res block is x + conv2(swish(gn2(conv1(swish(gn1(x)))))) with a 1x1 nin_shortcut where the
// width changes; group norms of 32 groups, eps 1e-6. The names are the checkpoint's
// (decoder.up.3.block.1.conv2.weight, ...); up.i is level i, finest first, as LDM stores them.
#pragma once
#include <ATen/ATen.h>
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <vector>

#include "model/params.h"

namespace adtree::model {

struct Kl16Config {
  int64_t embed_dim = 16;  // the tokens' numbers
  int64_t ch = 128;
  std::vector<int64_t> ch_mult{1, 1, 2, 2, 4};
  int64_t num_res_blocks = 2;  // the decoder runs num_res_blocks + 1 per level
  int64_t norm_groups = 32;
  double latent_scale = 0.2325;  // MAR's: tokens = latents * latent_scale

  int64_t factor() const { return int64_t{1} << (ch_mult.size() - 1); }
  void validate() const;  // throws adtree::Error naming the bad field
  nlohmann::json to_json() const;
  static Kl16Config from_json(const nlohmann::json& j);
};

std::vector<ParamSpec> kl16_decoder_param_specs(const Kl16Config& c);

class Kl16Decoder {
 public:
  Kl16Decoder(Kl16Config c, const TensorMap& weights);  // checked, fp32 copies
  const Kl16Config& config() const { return c_; }
  // tokens [B, h*w, D] (row-major cells) -> pixels [B, 3, h f, w f], about [-1, 1], not clamped.
  at::Tensor decode(const at::Tensor& tokens, int64_t h, int64_t w) const;

 private:
  at::Tensor conv(const at::Tensor& x, const std::string& name, int64_t padding) const;
  at::Tensor norm(const at::Tensor& x, const std::string& name) const;
  at::Tensor res_block(const at::Tensor& x, const std::string& p) const;
  at::Tensor attention(const at::Tensor& x, const std::string& p) const;

  Kl16Config c_;
  TensorMap w_;
};

}  // namespace adtree::model
