// LlamaGen VQ tokenizer, functional style: every op reads its tensors from the TensorMap, so the
// same code serves loaded checkpoints, random models and training (tensors requiring grad).
// Architecture and names: LLAMAGEN.md "VQ tokenizer (VQ-16)".
#include "model/llamagen/vq.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "util/error.h"

namespace adtree::model {

namespace {

const char* kCfg = "VQ config: ";

std::string ints_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

int64_t json_int(const nlohmann::json& j, const char* key) {
  const auto& v = j.at(key);
  if (!v.is_number_integer()) {
    throw Error(std::string(kCfg) + "'" + key + "' must be an integer, got " + v.dump());
  }
  return v.get<int64_t>();
}

const at::Tensor& param(const TensorMap& w, const std::string& name) {
  auto it = w.find(name);
  if (it == w.end()) throw Error("VQ weights: missing tensor '" + name + "'");
  return it->second;
}

at::Tensor swish(const at::Tensor& x) {
  return at::silu(x);
}

// ---- parameter specs ----------------------------------------------------------------------------

void add_conv(std::vector<ParamSpec>& specs, const std::string& prefix, int64_t in, int64_t out,
              int64_t k) {
  // Kaiming-like std so a random model keeps activations O(1) and decodes to finite, varied images.
  const double std = std::sqrt(1.0 / static_cast<double>(in * k * k));
  specs.push_back({prefix + ".weight", {out, in, k, k}, Init::Normal, std});
  specs.push_back({prefix + ".bias", {out}, Init::Zeros, 0.0});
}

void add_norm(std::vector<ParamSpec>& specs, const std::string& prefix, int64_t c) {
  specs.push_back({prefix + ".weight", {c}, Init::Ones, 0.0});
  specs.push_back({prefix + ".bias", {c}, Init::Zeros, 0.0});
}

void add_res(std::vector<ParamSpec>& specs, const std::string& prefix, int64_t in, int64_t out) {
  add_norm(specs, prefix + ".norm1", in);
  add_conv(specs, prefix + ".conv1", in, out, 3);
  add_norm(specs, prefix + ".norm2", out);
  add_conv(specs, prefix + ".conv2", out, out, 3);
  if (in != out) add_conv(specs, prefix + ".nin_shortcut", in, out, 1);
}

void add_attn(std::vector<ParamSpec>& specs, const std::string& prefix, int64_t c) {
  add_norm(specs, prefix + ".norm", c);
  for (const char* n : {".q", ".k", ".v", ".proj_out"}) add_conv(specs, prefix + n, c, c, 1);
}

void add_mid(std::vector<ParamSpec>& specs, const std::string& prefix, int64_t c) {
  add_res(specs, prefix + ".0", c, c);
  add_attn(specs, prefix + ".1", c);
  add_res(specs, prefix + ".2", c, c);
}

// ---- forward pieces ---------------------------------------------------------------------------

at::Tensor mid_forward(const TensorMap& w, const std::string& prefix, at::Tensor h,
                       const VqConfig& cfg) {
  h = detail::res_block(w, prefix + ".0", h, cfg);
  h = detail::attn_block(w, prefix + ".1", h, cfg);
  return detail::res_block(w, prefix + ".2", h, cfg);
}

void check_rank(const at::Tensor& t, int64_t rank, const char* what, const char* layout) {
  if (!t.defined() || t.dim() != rank) {
    throw Error(std::string("VQ ") + what + ": expected a " + std::to_string(rank) + "-d tensor " +
                layout + ", got " + (t.defined() ? shape_str(t.sizes()) : std::string("none")));
  }
}

}  // namespace

// ---- config ------------------------------------------------------------------------------------

void VqConfig::validate() const {
  auto positive = [](int64_t v, const char* key) {
    if (v <= 0)
      throw Error(std::string(kCfg) + key + " must be positive, got " + std::to_string(v));
  };
  positive(codebook_size, "codebook_size");
  positive(codebook_dim, "codebook_dim");
  positive(ch, "ch");
  positive(z_channels, "z_channels");
  positive(num_res_blocks, "num_res_blocks");
  positive(norm_groups, "norm_groups");
  if (!(norm_eps > 0.0) || !std::isfinite(norm_eps)) {
    throw Error(std::string(kCfg) + "norm_eps must be a positive number, got " +
                std::to_string(norm_eps));
  }
  // Upper bounds far above any real VQ (LlamaGen: codebook 16384 x 8, ch 128, ch_mult <= 4) that
  // keep ch * ch_mult and the parameter shapes far from int64 overflow (reliability.md, Fuzzing).
  auto at_most = [](int64_t v, int64_t cap, const char* key) {
    if (v > cap) {
      throw Error(std::string(kCfg) + key + " (" + std::to_string(v) + ") is larger than " +
                  std::to_string(cap));
    }
  };
  at_most(codebook_size, int64_t{1} << 24, "codebook_size");
  at_most(codebook_dim, int64_t{1} << 16, "codebook_dim");
  at_most(ch, int64_t{1} << 16, "ch");
  at_most(z_channels, int64_t{1} << 16, "z_channels");
  at_most(num_res_blocks, 1024, "num_res_blocks");
  for (int64_t m : ch_mult) at_most(m, 1024, "a ch_mult entry");
  if (ch_mult.empty()) throw Error(std::string(kCfg) + "ch_mult must not be empty");
  // 2^15 downsampling is far beyond any image; the bound keeps downsample_factor() well defined.
  if (ch_mult.size() > 16) {
    throw Error(std::string(kCfg) + "ch_mult has " + std::to_string(ch_mult.size()) +
                " levels; at most 16 are supported");
  }
  for (int64_t m : ch_mult) {
    if (m <= 0)
      throw Error(std::string(kCfg) + "ch_mult entries must be positive, got " + ints_str(ch_mult));
  }
  // GroupNorm runs on ch (encoder level 0 input) and on ch * every multiplier.
  std::vector<int64_t> widths{ch};
  for (int64_t m : ch_mult) widths.push_back(ch * m);
  for (int64_t c : widths) {
    if (c % norm_groups != 0) {
      throw Error(std::string(kCfg) + "channel count " + std::to_string(c) + " (ch " +
                  std::to_string(ch) + " x ch_mult " + ints_str(ch_mult) +
                  ") is not divisible by norm_groups " + std::to_string(norm_groups));
    }
  }
}

nlohmann::json VqConfig::to_json() const {
  return nlohmann::json{{"codebook_size", codebook_size},
                        {"codebook_dim", codebook_dim},
                        {"ch", ch},
                        {"ch_mult", ch_mult},
                        {"z_channels", z_channels},
                        {"num_res_blocks", num_res_blocks},
                        {"norm_groups", norm_groups},
                        {"norm_eps", norm_eps}};
}

VqConfig VqConfig::from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw Error(std::string(kCfg) + "expected a JSON object, got " + j.dump());
  VqConfig c;
  auto read_int = [&](const char* key, int64_t& out) {
    if (j.contains(key)) out = json_int(j, key);
  };
  read_int("codebook_size", c.codebook_size);
  read_int("codebook_dim", c.codebook_dim);
  read_int("ch", c.ch);
  read_int("z_channels", c.z_channels);
  read_int("num_res_blocks", c.num_res_blocks);
  read_int("norm_groups", c.norm_groups);
  if (j.contains("ch_mult")) {
    const auto& v = j.at("ch_mult");
    bool ok = v.is_array();
    if (ok) {
      for (const auto& e : v) ok = ok && e.is_number_integer();
    }
    if (!ok)
      throw Error(std::string(kCfg) + "'ch_mult' must be an array of integers, got " + v.dump());
    c.ch_mult = v.get<std::vector<int64_t>>();
  }
  if (j.contains("norm_eps")) {
    const auto& v = j.at("norm_eps");
    if (!v.is_number())
      throw Error(std::string(kCfg) + "'norm_eps' must be a number, got " + v.dump());
    c.norm_eps = v.get<double>();
  }
  c.validate();
  return c;
}

// ---- specs -------------------------------------------------------------------------------------

namespace detail {

void add_encoder_specs(std::vector<ParamSpec>& s, const VqConfig& cfg) {
  const int64_t levels = static_cast<int64_t>(cfg.ch_mult.size());
  const int64_t top = cfg.ch * cfg.ch_mult.back();
  add_conv(s, "encoder.conv_in", 3, cfg.ch, 3);
  int64_t in = cfg.ch;  // in_ch_mult = (1,) + ch_mult
  for (int64_t l = 0; l < levels; ++l) {
    const std::string p = "encoder.conv_blocks." + std::to_string(l);
    const int64_t out = cfg.ch * cfg.ch_mult[l];
    for (int64_t j = 0; j < cfg.num_res_blocks; ++j) {
      add_res(s, p + ".res." + std::to_string(j), in, out);
      in = out;
    }
    // Attention only at the last (lowest-resolution) encoder level, one per res block.
    if (l == levels - 1) {
      for (int64_t j = 0; j < cfg.num_res_blocks; ++j)
        add_attn(s, p + ".attn." + std::to_string(j), out);
    } else {
      add_conv(s, p + ".downsample.conv", out, out, 3);
    }
  }
  add_mid(s, "encoder.mid", top);
  add_norm(s, "encoder.norm_out", top);
  add_conv(s, "encoder.conv_out", top, cfg.z_channels, 3);
}

void add_decoder_specs(std::vector<ParamSpec>& s, const VqConfig& cfg) {
  const int64_t levels = static_cast<int64_t>(cfg.ch_mult.size());
  const int64_t top = cfg.ch * cfg.ch_mult.back();
  add_conv(s, "decoder.conv_in", cfg.z_channels, top, 3);
  add_mid(s, "decoder.mid", top);
  int64_t in = top;
  for (int64_t l = 0; l < levels; ++l) {
    const std::string p = "decoder.conv_blocks." + std::to_string(l);
    const int64_t out = cfg.ch * cfg.ch_mult[levels - 1 - l];
    for (int64_t j = 0; j <= cfg.num_res_blocks; ++j) {
      add_res(s, p + ".res." + std::to_string(j), in, out);
      in = out;
    }
    // Decoder level 0 is the lowest resolution: the only one with attention (LLAMAGEN.md).
    if (l == 0) {
      for (int64_t j = 0; j <= cfg.num_res_blocks; ++j)
        add_attn(s, p + ".attn." + std::to_string(j), out);
    }
    if (l != levels - 1) add_conv(s, p + ".upsample.conv", out, out, 3);
  }
  add_norm(s, "decoder.norm_out", in);
  add_conv(s, "decoder.conv_out", in, 3, 3);
}

void add_conv_spec(std::vector<ParamSpec>& s, const std::string& prefix, int64_t in, int64_t out,
                   int64_t k) {
  add_conv(s, prefix, in, out, k);
}

}  // namespace detail

std::vector<ParamSpec> vq_param_specs(const VqConfig& cfg, bool with_encoder) {
  cfg.validate();
  std::vector<ParamSpec> s;
  if (with_encoder) detail::add_encoder_specs(s, cfg);
  detail::add_decoder_specs(s, cfg);
  // LlamaGen's nn.Embedding init: uniform(-1/n, 1/n); rows are L2-normalised at every lookup.
  s.push_back({"quantize.embedding.weight",
               {cfg.codebook_size, cfg.codebook_dim},
               Init::Uniform,
               1.0 / static_cast<double>(cfg.codebook_size)});
  if (with_encoder) add_conv(s, "quant_conv", cfg.z_channels, cfg.codebook_dim, 1);
  add_conv(s, "post_quant_conv", cfg.codebook_dim, cfg.z_channels, 1);
  return s;
}

// ---- building blocks ---------------------------------------------------------------------------

namespace detail {

at::Tensor group_norm(const TensorMap& w, const std::string& prefix, const at::Tensor& x,
                      const VqConfig& cfg) {
  const auto& weight = param(w, prefix + ".weight");
  // In the weights' dtype: under bf16 autocast a convolution hands over bf16 activations, and
  // libtorch 1.13's CPU group norm refuses inputs whose dtype differs from its weights'.
  return at::group_norm(x.to(weight.scalar_type()), cfg.norm_groups, weight,
                        param(w, prefix + ".bias"), cfg.norm_eps);
}

at::Tensor conv(const TensorMap& w, const std::string& prefix, const at::Tensor& x, int64_t stride,
                int64_t padding) {
  std::array<int64_t, 2> st{stride, stride};
  std::array<int64_t, 2> pd{padding, padding};
  return at::conv2d(x, param(w, prefix + ".weight"), param(w, prefix + ".bias"), st, pd);
}

at::Tensor res_block(const TensorMap& w, const std::string& prefix, const at::Tensor& x,
                     const VqConfig& cfg) {
  at::Tensor h = conv(w, prefix + ".conv1", swish(group_norm(w, prefix + ".norm1", x, cfg)), 1, 1);
  // Dropout sits here in the reference; it is 0 for the released tokenizers, so inference skips it.
  h = conv(w, prefix + ".conv2", swish(group_norm(w, prefix + ".norm2", h, cfg)), 1, 1);
  const at::Tensor shortcut =
      w.count(prefix + ".nin_shortcut.weight") ? conv(w, prefix + ".nin_shortcut", x, 1, 0) : x;
  return shortcut + h;
}

at::Tensor attn_block(const TensorMap& w, const std::string& prefix, const at::Tensor& x,
                      const VqConfig& cfg) {
  const at::Tensor hn = group_norm(w, prefix + ".norm", x, cfg);
  const int64_t b = x.size(0), c = x.size(1), hh = x.size(2), ww = x.size(3);
  const at::Tensor q = conv(w, prefix + ".q", hn, 1, 0).reshape({b, c, hh * ww}).permute({0, 2, 1});
  const at::Tensor k = conv(w, prefix + ".k", hn, 1, 0).reshape({b, c, hh * ww});
  const at::Tensor v = conv(w, prefix + ".v", hn, 1, 0).reshape({b, c, hh * ww});
  // [b, query, key] scores, scaled by 1/sqrt(c) as in the reference AttnBlock.
  const at::Tensor attn = at::softmax(at::bmm(q, k) * (1.0 / std::sqrt(static_cast<double>(c))), 2);
  const at::Tensor out = at::bmm(v, attn.permute({0, 2, 1})).reshape({b, c, hh, ww});
  return x + conv(w, prefix + ".proj_out", out, 1, 0);
}

at::Tensor downsample(const TensorMap& w, const std::string& prefix, const at::Tensor& x) {
  // The reference pads right/bottom only, then a stride-2 conv without padding (LLAMAGEN.md).
  std::array<int64_t, 4> pad{0, 1, 0, 1};
  return conv(w, prefix + ".conv", at::constant_pad_nd(x, pad, 0.0), 2, 0);
}

at::Tensor upsample(const TensorMap& w, const std::string& prefix, const at::Tensor& x) {
  std::array<int64_t, 2> size{x.size(2) * 2, x.size(3) * 2};
  at::Tensor up;
  if (x.scalar_type() == at::kFloat || x.scalar_type() == at::kDouble) {
    up = at::upsample_nearest2d(x, size);
  } else {
    // The reference interpolates low-precision activations in fp32 (bf16 nearest is missing on
    // some backends); nearest copies values, so the round trip is exact.
    up = at::upsample_nearest2d(x.to(at::kFloat), size).to(x.scalar_type());
  }
  return conv(w, prefix + ".conv", up, 1, 1);
}

at::Tensor encoder_trunk(const TensorMap& w, const at::Tensor& images, const VqConfig& cfg) {
  const at::Tensor& w0 = param(w, "encoder.conv_in.weight");
  at::Tensor h = detail::conv(w, "encoder.conv_in", images.to(w0.device(), w0.scalar_type()), 1, 1);
  const int64_t levels = static_cast<int64_t>(cfg.ch_mult.size());
  for (int64_t l = 0; l < levels; ++l) {
    const std::string p = "encoder.conv_blocks." + std::to_string(l);
    for (int64_t j = 0; j < cfg.num_res_blocks; ++j) {
      h = detail::res_block(w, p + ".res." + std::to_string(j), h, cfg);
      if (l == levels - 1) h = detail::attn_block(w, p + ".attn." + std::to_string(j), h, cfg);
    }
    if (l != levels - 1) h = detail::downsample(w, p + ".downsample", h);
  }
  h = mid_forward(w, "encoder.mid", h, cfg);
  h = detail::conv(w, "encoder.conv_out", swish(detail::group_norm(w, "encoder.norm_out", h, cfg)),
                   1, 1);
  return h;
}

at::Tensor decoder_trunk(const TensorMap& w, at::Tensor h, const VqConfig& cfg) {
  h = detail::conv(w, "decoder.conv_in", h, 1, 1);
  h = mid_forward(w, "decoder.mid", h, cfg);
  const int64_t levels = static_cast<int64_t>(cfg.ch_mult.size());
  for (int64_t l = 0; l < levels; ++l) {
    const std::string p = "decoder.conv_blocks." + std::to_string(l);
    for (int64_t j = 0; j <= cfg.num_res_blocks; ++j) {
      h = detail::res_block(w, p + ".res." + std::to_string(j), h, cfg);
      if (l == 0) h = detail::attn_block(w, p + ".attn." + std::to_string(j), h, cfg);
    }
    if (l != levels - 1) h = detail::upsample(w, p + ".upsample", h);
  }
  return detail::conv(w, "decoder.conv_out",
                      swish(detail::group_norm(w, "decoder.norm_out", h, cfg)), 1, 1);
}

}  // namespace detail

// ---- model -------------------------------------------------------------------------------------

VqModel::VqModel(VqConfig cfg, TensorMap weights) : cfg_(std::move(cfg)), w_(std::move(weights)) {
  cfg_.validate();
  has_encoder_ = w_.count("encoder.conv_in.weight") > 0;
  require_params(vq_param_specs(cfg_, has_encoder_), w_, "VQ weights");
}

at::Tensor VqModel::encode(const at::Tensor& images) const {
  if (!has_encoder_) {
    throw Error(
        "VQ encode: this tokenizer was loaded without encoder weights (encoder.*, quant_conv)");
  }
  check_rank(images, 4, "encode", "[B, 3, H, W]");
  const int64_t f = cfg_.downsample_factor();
  if (images.size(1) != 3 || images.size(2) % f != 0 || images.size(3) % f != 0 ||
      images.size(2) == 0 || images.size(3) == 0) {
    throw Error("VQ encode: images must be [B, 3, H, W] with H and W positive multiples of " +
                std::to_string(f) + ", got " + shape_str(images.sizes()));
  }
  return detail::conv(w_, "quant_conv", detail::encoder_trunk(w_, images, cfg_), 1, 0);
}

at::Tensor VqModel::normalized_codebook() const {
  // F.normalize(p=2, dim=-1, eps=1e-12): v / max(||v||, eps).
  const at::Tensor& e = param(w_, "quantize.embedding.weight");
  return e / at::clamp_min(e.norm(2, {1}, true), 1e-12);
}

at::Tensor VqModel::quantize(const at::Tensor& latents) const {
  check_rank(latents, 4, "quantize", "[B, codebook_dim, h, w]");
  if (latents.size(1) != cfg_.codebook_dim) {
    throw Error("VQ quantize: latents have " + std::to_string(latents.size(1)) +
                " channels, the codebook has dimension " + std::to_string(cfg_.codebook_dim));
  }
  const at::NoGradGuard no_grad;
  const int64_t b = latents.size(0), hw = latents.size(2) * latents.size(3);
  // Distances in fp32 whatever the weights' dtype: 16384 near-unit codes are too close for fp16.
  at::Tensor z =
      latents.detach().to(at::kFloat).permute({0, 2, 3, 1}).reshape({b * hw, cfg_.codebook_dim});
  z = z / at::clamp_min(z.norm(2, {1}, true), 1e-12);
  const at::Tensor e = normalized_codebook().detach().to(z.device(), at::kFloat);
  const at::Tensor e_sq = (e * e).sum(1);
  // The reference's ||z||^2 + ||e||^2 - 2 z.e argmin, chunked so the [rows, codebook] distance
  // matrix stays bounded for big batches.
  const int64_t chunk = std::max<int64_t>(1, (int64_t{1} << 24) / cfg_.codebook_size);
  std::vector<at::Tensor> parts;
  for (int64_t r = 0; r < b * hw; r += chunk) {
    const at::Tensor zc = z.narrow(0, r, std::min(chunk, b * hw - r));
    const at::Tensor d = (zc * zc).sum(1, true) + e_sq - 2.0 * at::mm(zc, e.t());
    parts.push_back(d.argmin(1));
  }
  const at::Tensor idx =
      parts.empty() ? at::empty({0}, z.options().dtype(at::kLong)) : at::cat(parts);
  return idx.to(at::kLong).reshape({b, hw});
}

at::Tensor VqModel::decode(const at::Tensor& indices, int64_t h, int64_t w) const {
  return decode_latents(latents_of(indices, h, w));
}

at::Tensor VqModel::latents_of(const at::Tensor& indices, int64_t h, int64_t w) const {
  check_rank(indices, 2, "decode", "of indices [B, n]");
  if (h <= 0 || w <= 0) {
    throw Error("VQ decode: grid size must be positive, got " + std::to_string(h) + "x" +
                std::to_string(w));
  }
  if (at::isFloatingType(indices.scalar_type()) || indices.scalar_type() == at::kBool) {
    throw Error("VQ decode: indices must be an integer tensor");
  }
  const int64_t b = indices.size(0), n = indices.size(1);
  if (n > h * w) {
    throw Error("VQ decode: " + std::to_string(n) + " indices do not fit a " + std::to_string(h) +
                "x" + std::to_string(w) + " grid");
  }
  if (indices.numel() > 0) {
    const int64_t lo = indices.min().item<int64_t>(), hi = indices.max().item<int64_t>();
    if (lo < 0 || hi >= cfg_.codebook_size) {
      throw Error("VQ decode: index " + std::to_string(lo < 0 ? lo : hi) +
                  " is out of range of the codebook (size " + std::to_string(cfg_.codebook_size) +
                  ")");
    }
  }
  const at::Tensor codebook = normalized_codebook();
  const at::Tensor idx = indices.to(codebook.device(), at::kLong).reshape({b * n});
  at::Tensor cells = codebook.index_select(0, idx).reshape({b, n, cfg_.codebook_dim});
  // Cells not generated yet decode from a zero latent (LLAMAGEN.md: callers mask that region).
  if (n < h * w) {
    cells = at::cat({cells, at::zeros({b, h * w - n, cfg_.codebook_dim}, codebook.options())}, 1);
  }
  // get_codebook_entry(channel_first=True): cells are row-major, channels moved to dim 1.
  return cells.reshape({b, h, w, cfg_.codebook_dim}).permute({0, 3, 1, 2}).contiguous();
}

at::Tensor VqModel::decode_latents(const at::Tensor& zq) const {
  check_rank(zq, 4, "decode_latents", "[B, codebook_dim, h, w]");
  if (zq.size(1) != cfg_.codebook_dim) {
    throw Error("VQ decode_latents: latents have " + std::to_string(zq.size(1)) +
                " channels, expected codebook_dim " + std::to_string(cfg_.codebook_dim));
  }
  const at::Tensor& w0 = param(w_, "post_quant_conv.weight");
  at::Tensor h = detail::conv(w_, "post_quant_conv", zq.to(w0.device(), w0.scalar_type()), 1, 0);
  return detail::decoder_trunk(w_, h, cfg_);
}

at::Tensor VqModel::to_bytes(const at::Tensor& images) {
  check_rank(images, 4, "to_bytes", "[B, 3, H, W]");
  if (images.size(1) != 3) {
    throw Error("VQ to_bytes: images must have 3 channels, got " + shape_str(images.sizes()));
  }
  const at::NoGradGuard no_grad;
  return at::clamp(images.detach().to(at::kFloat) * 127.5 + 128.0, 0.0, 255.0)
      .to(at::kByte)
      .permute({0, 2, 3, 1})
      .contiguous()
      .to(at::kCPU);
}

}  // namespace adtree::model
