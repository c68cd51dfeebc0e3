// LlamaGen VQ tokenizer (VQ-16 architecture, any size): conv encoder, L2-normalised codebook
// quantiser, conv decoder. See LLAMAGEN.md "VQ tokenizer"; tensor names follow the reference.
#pragma once
#include <ATen/ATen.h>
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
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
  // What decode feeds the decoder: the checked indices' normalised codes as latents
  // [B, codebook_dim, h, w], zeros past the prefix (VqDecoder decodes the same latents).
  at::Tensor latents_of(const at::Tensor& indices, int64_t h, int64_t w) const;
  // Codebook rows after L2 normalisation [codebook_size, codebook_dim].
  at::Tensor normalized_codebook() const;
  // Decoder from quantised latents [B, codebook_dim, h, w] (used by decode and by training).
  at::Tensor decode_latents(const at::Tensor& zq) const;

  // [B, 3, H, W] in [-1, 1] -> uint8 [B, H, W, 3] via clamp(127.5 x + 128, 0, 255), truncated like
  // the reference sample scripts; contiguous, on the CPU (bytes are for files and the screen).
  static at::Tensor to_bytes(const at::Tensor& images);

 private:
  VqConfig cfg_;
  TensorMap w_;
  bool has_encoder_ = false;
};

// The building blocks, exposed so tests can check them against direct formulas. `prefix` names the
// block's tensors in `w` (e.g. "decoder.mid.0"); a missing tensor throws adtree::Error.
namespace detail {
// GroupNorm over cfg.norm_groups groups with eps cfg.norm_eps, affine `prefix.weight/bias`.
at::Tensor group_norm(const TensorMap& w, const std::string& prefix, const at::Tensor& x,
                      const VqConfig& cfg);
// Conv2d with `prefix.weight/bias`.
at::Tensor conv(const TensorMap& w, const std::string& prefix, const at::Tensor& x, int64_t stride,
                int64_t padding);
// ResnetBlock: x + conv2(swish(norm2(conv1(swish(norm1(x)))))), shortcut nin_shortcut if present.
at::Tensor res_block(const TensorMap& w, const std::string& prefix, const at::Tensor& x,
                     const VqConfig& cfg);
// AttnBlock: single-head self-attention over the h*w positions, with residual.
at::Tensor attn_block(const TensorMap& w, const std::string& prefix, const at::Tensor& x,
                      const VqConfig& cfg);
// Downsample: pad right/bottom by one zero, then `prefix.conv` 3x3 stride 2 without padding.
at::Tensor downsample(const TensorMap& w, const std::string& prefix, const at::Tensor& x);
// Upsample: nearest x2, then `prefix.conv` 3x3 with padding 1.
at::Tensor upsample(const TensorMap& w, const std::string& prefix, const at::Tensor& x);

// The conv trunks without the quantiser, shared with the continuous family's KL VAE
// (model/continuous/kl_vae.h): the encoder from images [B, 3, H, W] to [B, z_channels, h, w], the
// decoder from [B, z_channels, h, w] to images. Their specs and a 1x1 or kxk conv's.
at::Tensor encoder_trunk(const TensorMap& w, const at::Tensor& images, const VqConfig& cfg);
at::Tensor decoder_trunk(const TensorMap& w, at::Tensor h, const VqConfig& cfg);
void add_encoder_specs(std::vector<ParamSpec>& s, const VqConfig& cfg);
void add_decoder_specs(std::vector<ParamSpec>& s, const VqConfig& cfg);
void add_conv_spec(std::vector<ParamSpec>& s, const std::string& prefix, int64_t in, int64_t out,
                   int64_t k);
}  // namespace detail

}  // namespace adtree::model
