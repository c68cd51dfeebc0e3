#include "model/continuous/kl_vae.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/json_int.h"

namespace adtree::model {

namespace {

constexpr const char* kVaeCfg = "KL VAE config: ";

void check_vae_rank(const at::Tensor& t, int64_t rank, const char* what, const char* layout) {
  if (!t.defined() || t.dim() != rank) {
    throw Error(std::string("KL VAE ") + what + ": expected a " + std::to_string(rank) +
                "-d tensor " + layout + ", got " +
                (t.defined() ? shape_str(t.sizes()) : std::string("none")));
  }
}

}  // namespace

VqConfig KlVaeConfig::trunk() const {
  VqConfig v;
  v.codebook_size = 1;  // no codebook: the trunks never read it
  v.codebook_dim = latent_dim;
  v.ch = ch;
  v.ch_mult = ch_mult;
  v.z_channels = z_channels;
  v.num_res_blocks = num_res_blocks;
  v.norm_groups = norm_groups;
  return v;
}

void KlVaeConfig::validate() const {
  if (latent_dim <= 0 || latent_dim > 1024) {
    throw Error(std::string(kVaeCfg) + "latent_dim must be in 1..1024, got " +
                std::to_string(latent_dim));
  }
  if (!(latent_scale > 0.0) || !std::isfinite(latent_scale)) {
    throw Error(std::string(kVaeCfg) + "latent_scale must be a positive number, got " +
                std::to_string(latent_scale));
  }
  trunk().validate();
}

nlohmann::json KlVaeConfig::to_json() const {
  return nlohmann::json{{"latent_dim", latent_dim},
                        {"ch", ch},
                        {"ch_mult", ch_mult},
                        {"z_channels", z_channels},
                        {"num_res_blocks", num_res_blocks},
                        {"norm_groups", norm_groups},
                        {"latent_scale", latent_scale}};
}

KlVaeConfig KlVaeConfig::from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw Error(std::string(kVaeCfg) + "expected a JSON object, got " + j.dump());
  KlVaeConfig c;
  c.latent_dim = json_int(j, "latent_dim", c.latent_dim);
  c.ch = json_int(j, "ch", c.ch);
  c.z_channels = json_int(j, "z_channels", c.z_channels);
  c.num_res_blocks = json_int(j, "num_res_blocks", c.num_res_blocks);
  c.norm_groups = json_int(j, "norm_groups", c.norm_groups);
  if (j.contains("ch_mult")) c.ch_mult = json_ints(j.at("ch_mult"), "ch_mult");
  c.latent_scale = json_field(j, "latent_scale", c.latent_scale);
  c.validate();
  return c;
}

std::vector<ParamSpec> kl_vae_param_specs(const KlVaeConfig& cfg, bool with_encoder) {
  cfg.validate();
  const VqConfig t = cfg.trunk();
  std::vector<ParamSpec> s;
  if (with_encoder) {
    detail::add_encoder_specs(s, t);
    detail::add_conv_spec(s, "quant_conv", t.z_channels, 2 * cfg.latent_dim, 1);
  }
  detail::add_conv_spec(s, "post_quant_conv", cfg.latent_dim, t.z_channels, 1);
  detail::add_decoder_specs(s, t);
  return s;
}

KlVae::KlVae(KlVaeConfig cfg, TensorMap weights) : cfg_(std::move(cfg)), w_(std::move(weights)) {
  cfg_.validate();
  has_encoder_ = w_.count("encoder.conv_in.weight") > 0;
  require_params(kl_vae_param_specs(cfg_, has_encoder_), w_, "KL VAE weights");
}

KlVae::Moments KlVae::encode(const at::Tensor& images) const {
  if (!has_encoder_) throw Error("KL VAE encode: this tokenizer was loaded without its encoder");
  check_vae_rank(images, 4, "encode", "[B, 3, H, W]");
  const int64_t f = cfg_.downsample_factor();
  if (images.size(1) != 3 || images.size(2) % f != 0 || images.size(3) % f != 0) {
    throw Error("KL VAE encode: images must be [B, 3, H, W] with H and W multiples of " +
                std::to_string(f) + ", got " + shape_str(images.sizes()));
  }
  const at::Tensor h = detail::encoder_trunk(w_, images, cfg_.trunk());
  const auto moments = detail::conv(w_, "quant_conv", h, 1, 0).chunk(2, 1);
  // The reference VAEs' clamp: a log-variance outside [-30, 20] only overflows the KL term.
  return {moments[0], at::clamp(moments[1], -30.0, 20.0)};
}

at::Tensor KlVae::tokens_of(const at::Tensor& images) const {
  const auto mean = encode(images).mean;  // [B, D, h, w]
  return (mean * cfg_.latent_scale).flatten(2).transpose(1, 2).contiguous();
}

at::Tensor KlVae::decode(const at::Tensor& tokens, int64_t h, int64_t w) const {
  check_vae_rank(tokens, 3, "decode", "[B, n, latent_dim]");
  const int64_t b = tokens.size(0), n = tokens.size(1);
  if (tokens.size(2) != cfg_.latent_dim || n > h * w || h <= 0 || w <= 0) {
    throw Error("KL VAE decode: tokens " + shape_str(tokens.sizes()) + " do not fit a " +
                std::to_string(h) + "x" + std::to_string(w) + " grid of " +
                std::to_string(cfg_.latent_dim) + "-d tokens");
  }
  const at::Tensor& w0 = w_.at("post_quant_conv.weight");
  at::Tensor cells = tokens.to(w0.device(), w0.scalar_type());
  if (n < h * w)
    cells = at::cat({cells, at::zeros({b, h * w - n, tokens.size(2)}, w0.options())}, 1);
  auto z = cells.transpose(1, 2).reshape({b, cfg_.latent_dim, h, w}) / cfg_.latent_scale;
  return decode_latents(z);
}

at::Tensor KlVae::decode_latents(const at::Tensor& z) const {
  check_vae_rank(z, 4, "decode_latents", "[B, latent_dim, h, w]");
  const at::Tensor& w0 = w_.at("post_quant_conv.weight");
  at::Tensor h = detail::conv(w_, "post_quant_conv", z.to(w0.device(), w0.scalar_type()), 1, 0);
  return detail::decoder_trunk(w_, h, cfg_.trunk());
}

}  // namespace adtree::model
