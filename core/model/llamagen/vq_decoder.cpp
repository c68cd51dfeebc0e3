#include "model/llamagen/vq_decoder.h"

#include <array>
#include <cmath>

#include "io/mapped_pages.h"
#include "model/cpu/pack_cache.h"
#include "model/llamagen/group_norm_nhwc.h"
#include "util/error.h"

namespace adtree::model {

namespace {
constexpr auto kChannelsLast = at::MemoryFormat::ChannelsLast;

bool is_decoder_tensor(const std::string& name) {
  return name.rfind("decoder.", 0) == 0 || name.rfind("post_quant_conv.", 0) == 0;
}
}  // namespace

VqPrecision vq_precision_from_string(const std::string& name) {
  if (name == "auto") return VqPrecision::Auto;
  if (name == "fp32") return VqPrecision::Fp32;
  if (name == "bf16") return VqPrecision::Bf16;
  throw Error("unknown VQ decoder precision '" + name + "' (known: auto, fp32, bf16)");
}

std::string to_string(VqPrecision p) {
  return p == VqPrecision::Fp32 ? "fp32" : p == VqPrecision::Bf16 ? "bf16" : "auto";
}

bool cpu_has_bf16_products() {
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
  return has;
}

VqDecoder::VqDecoder(std::shared_ptr<const VqModel> vq, VqPrecision precision, PackCache* packs)
    : vq_(std::move(vq)) {
  if (!vq_) throw Error("VqDecoder: no VQ model");
  if (precision == VqPrecision::Auto) {
    precision = cpu_has_bf16_products() ? VqPrecision::Bf16 : VqPrecision::Fp32;
  }
  dtype_ = precision == VqPrecision::Bf16 ? at::kBFloat16 : at::kFloat;
  for (const auto& [name, t] : vq_->weights()) {
    if (!is_decoder_tensor(name)) continue;
    if (!t.device().is_cpu()) throw Error("VqDecoder: the VQ weights must be on the CPU");
    // Norm parameters (1-d, beside a 1-d bias of a norm) stay fp32: group_norm_nhwc reads them so.
    const bool norm = name.find("norm") != std::string::npos;
    const auto convert = [&](const at::Tensor& x) {
      at::Tensor c = norm ? x.to(at::kFloat).contiguous() : x.to(dtype_);
      return c.contiguous(c.dim() == 4 ? kChannelsLast : at::MemoryFormat::Contiguous);
    };
    // From the load's cache when there is one: the conversions are a third of a large model's load.
    const std::string key =
        std::string("vq.") + (dtype_ == at::kBFloat16 ? "bf16." : "fp32.") + name;
    w_.emplace(name, packs ? packs->converted(key, t, convert) : convert(t));
    // The file's pages of this tensor are read no more (VqModel keeps a handle: they fault back
    // in if the reference decoder runs), so the load's peak holds one copy, not two.
    if (!w_.at(name).is_same(t)) io::release_mapped_pages(t);
  }
}

const at::Tensor& VqDecoder::weight(const std::string& name) const {
  auto it = w_.find(name);
  if (it == w_.end()) throw Error("VQ decoder: missing tensor '" + name + "'");
  return it->second;
}

at::Tensor VqDecoder::conv(const std::string& prefix, const at::Tensor& x, int64_t padding) const {
  const std::array<int64_t, 2> stride{1, 1}, pad{padding, padding};
  return at::conv2d(x, weight(prefix + ".weight"), weight(prefix + ".bias"), stride, pad);
}

at::Tensor VqDecoder::norm(const std::string& prefix, const at::Tensor& x, bool silu) const {
  const auto& c = config();
  return group_norm_nhwc(x, c.norm_groups, weight(prefix + ".weight"), weight(prefix + ".bias"),
                         c.norm_eps, silu);
}

at::Tensor VqDecoder::res_block(const std::string& prefix, const at::Tensor& x) const {
  at::Tensor h = conv(prefix + ".conv1", norm(prefix + ".norm1", x, true), 1);
  h = conv(prefix + ".conv2", norm(prefix + ".norm2", h, true), 1);
  const at::Tensor shortcut =
      w_.count(prefix + ".nin_shortcut.weight") ? conv(prefix + ".nin_shortcut", x, 0) : x;
  return shortcut + h;
}

// The lowest-resolution attention (16 x 16 positions for VQ-16 at 256 px): small, so it runs in
// fp32 whatever the convolutions' dtype.
at::Tensor VqDecoder::attn_block(const std::string& prefix, const at::Tensor& x) const {
  const at::Tensor hn = norm(prefix + ".norm", x, false);
  const int64_t b = x.size(0), c = x.size(1), hh = x.size(2), ww = x.size(3);
  auto flat = [&](const char* n) {
    return conv(prefix + n, hn, 0).to(at::kFloat).reshape({b, c, hh * ww});
  };
  const at::Tensor q = flat(".q").permute({0, 2, 1}), k = flat(".k"), v = flat(".v");
  const at::Tensor attn = at::softmax(at::bmm(q, k) * (1.0 / std::sqrt(double(c))), 2);
  const at::Tensor out = at::bmm(v, attn.permute({0, 2, 1})).reshape({b, c, hh, ww});
  return x + conv(prefix + ".proj_out", out.to(dtype_).contiguous(kChannelsLast), 0);
}

at::Tensor VqDecoder::upsample(const std::string& prefix, const at::Tensor& x) const {
  const std::array<int64_t, 2> size{x.size(2) * 2, x.size(3) * 2};
  // Nearest copies values, so the fp32 round trip of a bf16 tensor is exact (libtorch 1.13 has
  // no bf16 nearest upsampling on the CPU).
  const at::Tensor up = at::upsample_nearest2d(x.to(at::kFloat), size);
  return conv(prefix + ".conv", up.to(dtype_).contiguous(kChannelsLast), 1);
}

at::Tensor VqDecoder::decode(const at::Tensor& indices, int64_t h, int64_t w) const {
  const at::NoGradGuard no_grad;
  const auto& cfg = config();
  at::Tensor x = vq_->latents_of(indices, h, w).to(dtype_).contiguous(kChannelsLast);
  x = conv("decoder.conv_in", conv("post_quant_conv", x, 0), 1);
  x = res_block("decoder.mid.0", x);
  x = attn_block("decoder.mid.1", x);
  x = res_block("decoder.mid.2", x);
  const int64_t levels = int64_t(cfg.ch_mult.size());
  for (int64_t l = 0; l < levels; ++l) {
    const std::string p = "decoder.conv_blocks." + std::to_string(l);
    for (int64_t j = 0; j <= cfg.num_res_blocks; ++j) {
      x = res_block(p + ".res." + std::to_string(j), x);
      if (l == 0) x = attn_block(p + ".attn." + std::to_string(j), x);
    }
    if (l != levels - 1) x = upsample(p + ".upsample", x);
  }
  x = conv("decoder.conv_out", norm("decoder.norm_out", x, true), 1);
  return x.to(at::kFloat).contiguous();
}

}  // namespace adtree::model
