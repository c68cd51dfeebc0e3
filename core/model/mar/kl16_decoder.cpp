#include "model/mar/kl16_decoder.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "util/error.h"

namespace adtree::model {

namespace {

void kl_conv_spec(std::vector<ParamSpec>& s, const std::string& n, int64_t in, int64_t out,
                  int64_t k) {
  s.push_back({n + ".weight", {out, in, k, k}, Init::Uniform, 1.0 / std::sqrt(double(in * k * k))});
  s.push_back({n + ".bias", {out}, Init::Zeros});
}

void kl_norm_spec(std::vector<ParamSpec>& s, const std::string& n, int64_t ch) {
  s.push_back({n + ".weight", {ch}, Init::Ones});
  s.push_back({n + ".bias", {ch}, Init::Zeros});
}

void kl_res_spec(std::vector<ParamSpec>& s, const std::string& p, int64_t in, int64_t out) {
  kl_norm_spec(s, p + ".norm1", in);
  kl_conv_spec(s, p + ".conv1", in, out, 3);
  kl_norm_spec(s, p + ".norm2", out);
  kl_conv_spec(s, p + ".conv2", out, out, 3);
  if (in != out) kl_conv_spec(s, p + ".nin_shortcut", in, out, 1);
}

}  // namespace

void Kl16Config::validate() const {
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw Error("KL-16 VAE config: " + what);
  };
  need(embed_dim > 0 && ch > 0 && !ch_mult.empty() && num_res_blocks >= 0,
       "embed_dim, ch and ch_mult must be positive");
  need(norm_groups > 0, "norm_groups must be positive");
  for (auto m : ch_mult)
    need(m > 0 && (ch * m) % norm_groups == 0,
         "every level's width must be a multiple of norm_groups");
  need(latent_scale > 0, "latent_scale must be above 0");
}

nlohmann::json Kl16Config::to_json() const {
  return {{"embed_dim", embed_dim},     {"ch", ch},
          {"ch_mult", ch_mult},         {"num_res_blocks", num_res_blocks},
          {"norm_groups", norm_groups}, {"latent_scale", latent_scale}};
}

Kl16Config Kl16Config::from_json(const nlohmann::json& j) {
  Kl16Config c;
  if (j.contains("embed_dim")) c.embed_dim = j.at("embed_dim").get<int64_t>();
  if (j.contains("ch")) c.ch = j.at("ch").get<int64_t>();
  if (j.contains("ch_mult")) c.ch_mult = j.at("ch_mult").get<std::vector<int64_t>>();
  if (j.contains("num_res_blocks")) c.num_res_blocks = j.at("num_res_blocks").get<int64_t>();
  if (j.contains("norm_groups")) c.norm_groups = j.at("norm_groups").get<int64_t>();
  if (j.contains("latent_scale")) c.latent_scale = j.at("latent_scale").get<double>();
  c.validate();
  return c;
}

std::vector<ParamSpec> kl16_decoder_param_specs(const Kl16Config& c) {
  std::vector<ParamSpec> s;
  const int64_t levels = int64_t(c.ch_mult.size());
  int64_t in = c.ch * c.ch_mult.back();
  kl_conv_spec(s, "post_quant_conv", c.embed_dim, c.embed_dim, 1);
  kl_conv_spec(s, "decoder.conv_in", c.embed_dim, in, 3);
  kl_res_spec(s, "decoder.mid.block_1", in, in);
  for (const char* n : {"q", "k", "v", "proj_out"})
    kl_conv_spec(s, std::string("decoder.mid.attn_1.") + n, in, in, 1);
  kl_norm_spec(s, "decoder.mid.attn_1.norm", in);
  kl_res_spec(s, "decoder.mid.block_2", in, in);
  for (int64_t l = levels - 1; l >= 0; --l) {
    const std::string p = "decoder.up." + std::to_string(l);
    const int64_t out = c.ch * c.ch_mult[size_t(l)];
    for (int64_t j = 0; j <= c.num_res_blocks; ++j, in = out)
      kl_res_spec(s, p + ".block." + std::to_string(j), in, out);
    if (l != 0) kl_conv_spec(s, p + ".upsample.conv", out, out, 3);
  }
  kl_norm_spec(s, "decoder.norm_out", in);
  kl_conv_spec(s, "decoder.conv_out", in, 3, 3);
  return s;
}

Kl16Decoder::Kl16Decoder(Kl16Config c, const TensorMap& weights) : c_(std::move(c)) {
  c_.validate();
  require_params(kl16_decoder_param_specs(c_), weights, "KL-16 VAE decoder weights");
  for (const auto& [k, t] : weights) w_.emplace(k, t.to(at::kFloat).contiguous());
}

at::Tensor Kl16Decoder::conv(const at::Tensor& x, const std::string& n, int64_t padding) const {
  return at::conv2d(x, w_.at(n + ".weight"), w_.at(n + ".bias"), 1, padding);
}

at::Tensor Kl16Decoder::norm(const at::Tensor& x, const std::string& n) const {
  return at::group_norm(x, c_.norm_groups, w_.at(n + ".weight"), w_.at(n + ".bias"), 1e-6);
}

at::Tensor Kl16Decoder::res_block(const at::Tensor& x, const std::string& p) const {
  auto h = conv(at::silu(norm(x, p + ".norm1")), p + ".conv1", 1);
  h = conv(at::silu(norm(h, p + ".norm2")), p + ".conv2", 1);
  const bool widen = w_.count(p + ".nin_shortcut.weight") != 0;
  return (widen ? conv(x, p + ".nin_shortcut", 0) : x) + h;
}

at::Tensor Kl16Decoder::attention(const at::Tensor& x, const std::string& p) const {
  const int64_t b = x.size(0), ch = x.size(1), hw = x.size(2) * x.size(3);
  const auto n = norm(x, p + ".norm");
  const auto q = conv(n, p + ".q", 0).reshape({b, ch, hw}).permute({0, 2, 1});
  const auto k = conv(n, p + ".k", 0).reshape({b, ch, hw});
  const auto v = conv(n, p + ".v", 0).reshape({b, ch, hw});
  const auto att = at::softmax(at::bmm(q, k) / std::sqrt(double(ch)), 2);  // [b, query, key]
  const auto out = at::bmm(v, att.permute({0, 2, 1})).reshape(x.sizes());
  return x + conv(out, p + ".proj_out", 0);
}

at::Tensor Kl16Decoder::decode(const at::Tensor& tokens, int64_t h, int64_t w) const {
  if (tokens.dim() != 3 || tokens.size(1) != h * w || tokens.size(2) != c_.embed_dim)
    throw Error("KL-16 decode: tokens must be [B, " + std::to_string(h * w) + ", " +
                std::to_string(c_.embed_dim) + "], got " + shape_str(tokens.sizes()));
  const int64_t b = tokens.size(0), levels = int64_t(c_.ch_mult.size());
  auto z = (tokens.to(at::kFloat) / c_.latent_scale).reshape({b, h, w, c_.embed_dim});
  auto x =
      conv(conv(z.permute({0, 3, 1, 2}).contiguous(), "post_quant_conv", 0), "decoder.conv_in", 1);
  x = res_block(x, "decoder.mid.block_1");
  x = attention(x, "decoder.mid.attn_1");
  x = res_block(x, "decoder.mid.block_2");
  for (int64_t l = levels - 1; l >= 0; --l) {
    const std::string p = "decoder.up." + std::to_string(l);
    for (int64_t j = 0; j <= c_.num_res_blocks; ++j)
      x = res_block(x, p + ".block." + std::to_string(j));
    if (l != 0)
      x = conv(at::upsample_nearest2d(x, {x.size(2) * 2, x.size(3) * 2}), p + ".upsample.conv", 1);
  }
  return conv(at::silu(norm(x, "decoder.norm_out")), "decoder.conv_out", 1);
}

}  // namespace adtree::model
