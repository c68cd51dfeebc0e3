// VqDecoder: the VQ decoder as a picture needs it on the CPU (docs/PERFORMANCE.md "The whole
// picture"). VqModel stays the reference (and what training runs); this decodes the same images
// faster: channels-last activations, the convolutions through oneDNN in bf16 where the CPU has
// AVX512-BF16 (fp32 elsewhere or when asked), GroupNorm with its SiLU fused (group_norm_nhwc.h),
// the attention in fp32. The weights are converted once, at load.
// Distance from the reference: fp32 within 1e-4 (rounding order); bf16 as test_vq_decoder states.
#pragma once
#include <ATen/ATen.h>

#include <memory>
#include <string>

#include "model/llamagen/vq.h"

namespace adtree::model {

class PackCache;  // pack_cache.h: the load's cache of converted weights

// "auto": bf16 where the CPU runs bf16 products natively (AVX512-BF16), else fp32.
enum class VqPrecision { Auto, Fp32, Bf16 };
VqPrecision vq_precision_from_string(const std::string& name);  // throws adtree::Error
std::string to_string(VqPrecision p);
// Whether this CPU has the bf16 dot product the bf16 convolutions need to pay.
bool cpu_has_bf16_products();

class VqDecoder {
 public:
  // `vq` must hold CPU fp32 weights; `precision` Auto resolves here. The converted weights come
  // through `packs` when given (the model loader's disk cache).
  VqDecoder(std::shared_ptr<const VqModel> vq, VqPrecision precision, PackCache* packs = nullptr);

  at::ScalarType dtype() const { return dtype_; }  // kFloat or kBFloat16
  const VqConfig& config() const { return vq_->config(); }

  // As VqModel::decode: indices [B, n] (a raster-order prefix of the h x w grid; the rest decodes
  // from zero latents) -> images [B, 3, h*f, w*f] in fp32, NCHW, about [-1, 1], not clamped.
  at::Tensor decode(const at::Tensor& indices, int64_t h, int64_t w) const;

 private:
  at::Tensor conv(const std::string& prefix, const at::Tensor& x, int64_t padding) const;
  at::Tensor norm(const std::string& prefix, const at::Tensor& x, bool silu) const;
  at::Tensor res_block(const std::string& prefix, const at::Tensor& x) const;
  at::Tensor attn_block(const std::string& prefix, const at::Tensor& x) const;
  at::Tensor upsample(const std::string& prefix, const at::Tensor& x) const;
  const at::Tensor& weight(const std::string& name) const;

  std::shared_ptr<const VqModel> vq_;
  at::ScalarType dtype_ = at::kFloat;
  TensorMap w_;  // convolutions in dtype_ and channels-last; norms in fp32
};

}  // namespace adtree::model
