// The continuous family's tokenizer (issue "CSpD", part 2): a KL-regularised VAE with the LlamaGen
// VQ's conv trunks (model/llamagen/vq.h) and no quantiser. The encoder's quant_conv gives a mean
// and a log-variance per cell; a token is the cell's latent times `latent_scale` (set after
// training so tokens have unit variance, as MAR's 0.2325 does for its KL-16), a vector of
// `latent_dim` numbers.
//   images [B, 3, H, W] -> encoder trunk -> quant_conv -> (mean, logvar) [B, D, h, w]
//   tokens [B, h*w, D] / latent_scale -> post_quant_conv -> decoder trunk -> images
#pragma once
#include <ATen/ATen.h>
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <vector>

#include "model/llamagen/vq.h"
#include "model/params.h"

namespace adtree::model {

struct KlVaeConfig {
  int64_t latent_dim = 4;  // D: numbers per token
  int64_t ch = 32;
  std::vector<int64_t> ch_mult{1, 2, 2};
  int64_t z_channels = 32;
  int64_t num_res_blocks = 1;
  int64_t norm_groups = 16;
  double latent_scale = 1.0;  // token = latent * latent_scale

  int64_t downsample_factor() const { return int64_t{1} << (ch_mult.size() - 1); }
  VqConfig trunk() const;  // the conv trunks' settings (no codebook)
  void validate() const;   // throws adtree::Error naming the bad field
  nlohmann::json to_json() const;
  static KlVaeConfig from_json(const nlohmann::json& j);  // missing keys keep defaults
};

std::vector<ParamSpec> kl_vae_param_specs(const KlVaeConfig& cfg, bool with_encoder);

class KlVae {
 public:
  // Tensors are used as given (device, dtype), so training can pass tensors that require grad.
  KlVae(KlVaeConfig cfg, TensorMap weights);

  const KlVaeConfig& config() const { return cfg_; }
  bool has_encoder() const { return has_encoder_; }
  const TensorMap& weights() const { return w_; }

  struct Moments {
    at::Tensor mean, logvar;  // [B, D, h, w], latent scale (not token scale)
  };
  // images [B, 3, H, W] in [-1, 1] -> the posterior's moments.
  Moments encode(const at::Tensor& images) const;
  // The posterior means as tokens [B, h*w, D] (row-major cells), times latent_scale.
  at::Tensor tokens_of(const at::Tensor& images) const;
  // Tokens [B, n, D] with n <= h*w (a raster-order prefix) -> images [B, 3, h*f, w*f], about
  // [-1, 1], not clamped. Cells not yet generated get a zero token (the latents' mean); callers
  // mask them.
  at::Tensor decode(const at::Tensor& tokens, int64_t h, int64_t w) const;
  // The decoder from latents [B, D, h, w] (latent scale), for training.
  at::Tensor decode_latents(const at::Tensor& z) const;

 private:
  KlVaeConfig cfg_;
  TensorMap w_;
  bool has_encoder_ = false;
};

}  // namespace adtree::model
