// LlamaGen VQ tokenizer (VQ-16 architecture, any size): conv encoder, L2-normalised codebook
// quantiser, conv decoder. See LLAMAGEN.md "VQ tokenizer"; tensor names follow the reference.
#pragma once
#include <ATen/ATen.h>
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <vector>

#include "model/params.h"

namespace adtree::model {

struct VqConfig {
  int64_t codebook_size = 16384;
  int64_t codebook_dim = 8;
  int64_t ch = 128;
  std::vector<int64_t> ch_mult{1, 1, 2, 2, 4};
  int64_t z_channels = 256;
  int64_t num_res_blocks = 2;  // encoder; the decoder has num_res_blocks + 1 per level
  int64_t norm_groups = 32;
  double norm_eps = 1e-6;

  int64_t downsample_factor() const { return int64_t{1} << (ch_mult.size() - 1); }
  void validate() const;  // throws adtree::Error on impossible values
  nlohmann::json to_json() const;
  static VqConfig from_json(const nlohmann::json& j);  // missing keys keep defaults
};

// Tensor names and shapes; the encoder (and quant_conv) is optional in a model directory.
std::vector<ParamSpec> vq_param_specs(const VqConfig& cfg, bool with_encoder);

class VqModel {
 public:
  // `weights` must match vq_param_specs (with or without the encoder); tensors are used as given
  // (device/dtype), so training can pass tensors that require grad.
  VqModel(VqConfig cfg, TensorMap weights);

  const VqConfig& config() const { return cfg_; }
  bool has_encoder() const { return has_encoder_; }
  const TensorMap& weights() const { return w_; }

  // images [B, 3, H, W] in [-1, 1] -> pre-quantisation latents [B, codebook_dim, H/f, W/f].
  at::Tensor encode(const at::Tensor& images) const;
  // latents -> nearest L2-normalised code indices [B, h*w] (row-major cells), int64.
  at::Tensor quantize(const at::Tensor& latents) const;
  // indices [B, n] with n <= h*w (a raster-order prefix of the grid) -> images [B, 3, h*f, w*f],
  // about [-1, 1], NOT clamped. Cells not yet generated get a zero latent; callers mask them.
  at::Tensor decode(const at::Tensor& indices, int64_t h, int64_t w) const;
  // Codebook rows after L2 normalisation [codebook_size, codebook_dim].
  at::Tensor normalized_codebook() const;
  // Decoder from quantised latents [B, codebook_dim, h, w] (used by decode and by training).
  at::Tensor decode_latents(const at::Tensor& zq) const;

  // [B, 3, H, W] in [-1, 1] -> uint8 [B, H, W, 3] via clamp(127.5 x + 128, 0, 255).
  static at::Tensor to_bytes(const at::Tensor& images);

 private:
  VqConfig cfg_;
  TensorMap w_;
  bool has_encoder_ = false;
};

}  // namespace adtree::model
