#include "model/mar/mar_backbone.h"

#include <cmath>

#include "model/cpu/pack_rows.h"
#include "model/cpu/packed_gemm.h"
#include "util/error.h"

namespace adtree::model {

namespace {

// xavier_uniform's half-width for a [out, in] matrix.
double xavier_half_width(int64_t out, int64_t in) {
  return std::sqrt(6.0 / double(out + in));
}

void vit_linear_spec(std::vector<ParamSpec>& s, const std::string& name, int64_t out, int64_t in) {
  s.push_back({name + ".weight", {out, in}, Init::Uniform, xavier_half_width(out, in)});
  s.push_back({name + ".bias", {out}, Init::Zeros});
}

void vit_norm_spec(std::vector<ParamSpec>& s, const std::string& name, int64_t dim) {
  s.push_back({name + ".weight", {dim}, Init::Ones});
  s.push_back({name + ".bias", {dim}, Init::Zeros});
}

void vit_block_specs(std::vector<ParamSpec>& s, const std::string& stack, int64_t depth,
                     int64_t dim, int64_t hidden) {
  for (int64_t i = 0; i < depth; ++i) {
    const std::string p = stack + "." + std::to_string(i) + ".";
    vit_norm_spec(s, p + "norm1", dim);
    vit_linear_spec(s, p + "attn.qkv", 3 * dim, dim);
    vit_linear_spec(s, p + "attn.proj", dim, dim);
    vit_norm_spec(s, p + "norm2", dim);
    vit_linear_spec(s, p + "mlp.fc1", hidden, dim);
    vit_linear_spec(s, p + "mlp.fc2", dim, hidden);
  }
}

}  // namespace

std::vector<ParamSpec> mar_backbone_param_specs(const MarConfig& c) {
  const int64_t e = c.encoder_dim, d = c.decoder_dim, slots = c.buffer_size + c.seq_len();
  std::vector<ParamSpec> s = {
      {"class_emb.weight", {c.num_classes, e}},
      {"fake_latent", {1, e}},
      {"encoder_pos_embed_learned", {1, slots, e}},
      {"mask_token", {1, 1, d}},
      {"decoder_pos_embed_learned", {1, slots, d}},
      {"diffusion_pos_embed_learned", {1, c.seq_len(), d}},
  };
  vit_linear_spec(s, "z_proj", e, c.token_dim);
  vit_norm_spec(s, "z_proj_ln", e);
  vit_block_specs(s, "encoder_blocks", c.encoder_depth, e, c.mlp_ratio * e);
  vit_norm_spec(s, "encoder_norm", e);
  vit_linear_spec(s, "decoder_embed", d, e);
  vit_block_specs(s, "decoder_blocks", c.decoder_depth, d, c.mlp_ratio * d);
  vit_norm_spec(s, "decoder_norm", d);
  return s;
}

MarBackbone::MarBackbone(MarConfig c, const TensorMap& weights) : c_(std::move(c)) {
  c_.validate();
  require_params(mar_backbone_param_specs(c_), weights, "MAR backbone weights");
  for (const auto& [k, t] : weights) w_.emplace(k, t.to(at::kFloat).contiguous());
}

void MarBackbone::pack(bool bf16) {
  std::vector<std::string> layers;
  for (const auto& [k, t] : w_) {
    const auto dot = k.rfind(".weight");
    if (t.dim() == 2 && dot != std::string::npos && dot + 7 == k.size() && k != "class_emb.weight")
      layers.push_back(k.substr(0, dot));
  }
  for (const auto& name : layers) {
    const auto& w = w_.at(name + ".weight");
    auto p = bf16 ? pack_weight_bf16(w) : pack_weight(w);
    if (!p.defined()) throw Error("MAR: " + name + " cannot be packed for the lean path");
    packed_[name] = std::move(p);
    w_.erase(name + ".weight");
  }
}

at::Tensor MarBackbone::linear(const at::Tensor& x, const std::string& name) const {
  const auto it = packed_.find(name);
  if (it != packed_.end()) return packed_linear(x.contiguous(), it->second, w_.at(name + ".bias"));
  return at::linear(x, w_.at(name + ".weight"), w_.at(name + ".bias"));
}

at::Tensor MarBackbone::norm(const at::Tensor& x, const std::string& name, bool affine) const {
  const int64_t dim = x.size(-1);
  if (!affine) return at::layer_norm(x, {dim}, {}, {}, c_.norm_eps);
  return at::layer_norm(x, {dim}, w_.at(name + ".weight"), w_.at(name + ".bias"), c_.norm_eps);
}

at::Tensor MarBackbone::block(const at::Tensor& x, const std::string& p, int64_t heads) const {
  const int64_t b = x.size(0), n = x.size(1), dim = x.size(2), hd = dim / heads;
  // qkv [B, n, 3, heads, hd] -> three [B, heads, n, hd]
  const auto qkv = linear(norm(x, p + "norm1"), p + "attn.qkv")
                       .reshape({b, n, 3, heads, hd})
                       .permute({2, 0, 3, 1, 4});
  const auto att =
      at::softmax(at::matmul(qkv[0], qkv[1].transpose(-2, -1)) / std::sqrt(double(hd)), -1);
  const auto mixed = at::matmul(att, qkv[2]).transpose(1, 2).reshape({b, n, dim});
  auto h = x + linear(mixed, p + "attn.proj");
  return h + linear(at::gelu(linear(norm(h, p + "norm2"), p + "mlp.fc1")), p + "mlp.fc2");
}

at::Tensor MarBackbone::class_embedding(const at::Tensor& labels) const {
  const auto ids = labels.to(at::kLong);
  if (ids.dim() != 1) throw Error("MAR: class labels must be one id per row");
  if (ids.numel() > 0 &&
      (ids.max().item<int64_t>() >= c_.num_classes || ids.min().item<int64_t>() < -1))
    throw Error("MAR: a class id is outside 0.." + std::to_string(c_.num_classes - 1) +
                " (or -1 for the null class)");
  const auto rows = w_.at("class_emb.weight").index_select(0, ids.clamp_min(0));
  return at::where(ids.lt(0).unsqueeze(1), w_.at("fake_latent").expand_as(rows), rows);
}

// keep [B, buffer + N] bool: the buffer and the known tokens.
at::Tensor MarBackbone::encode(const at::Tensor& tokens, const at::Tensor& keep,
                               const at::Tensor& class_emb) const {
  const int64_t b = tokens.size(0), e = c_.encoder_dim;
  auto x = linear(tokens.to(at::kFloat), "z_proj");
  const auto buffer = class_emb.to(at::kFloat).unsqueeze(1).expand({b, c_.buffer_size, e});
  x = norm(at::cat({buffer, x}, 1) + w_.at("encoder_pos_embed_learned"), "z_proj_ln");
  x = x.index({keep}).reshape({b, -1, e});  // row-major: each row's kept slots in order
  for (int64_t i = 0; i < c_.encoder_depth; ++i)
    x = block(x, "encoder_blocks." + std::to_string(i) + ".", c_.encoder_heads);
  return norm(x, "encoder_norm");
}

at::Tensor MarBackbone::decode(const at::Tensor& x, const at::Tensor& keep) const {
  const int64_t b = x.size(0), d = c_.decoder_dim;
  auto y = w_.at("mask_token").expand({b, keep.size(1), d}).clone();
  y.index_put_({keep}, linear(x, "decoder_embed").reshape({-1, d}));
  y = y + w_.at("decoder_pos_embed_learned");
  for (int64_t i = 0; i < c_.decoder_depth; ++i)
    y = block(y, "decoder_blocks." + std::to_string(i) + ".", c_.decoder_heads);
  y = norm(y, "decoder_norm").narrow(1, c_.buffer_size, c_.seq_len());
  return y + w_.at("diffusion_pos_embed_learned");
}

at::Tensor MarBackbone::forward(const at::Tensor& tokens, const at::Tensor& unknown,
                                const at::Tensor& class_emb) const {
  const int64_t b = tokens.size(0), n = c_.seq_len();
  if (tokens.dim() != 3 || tokens.size(1) != n || tokens.size(2) != c_.token_dim)
    throw Error("MAR: tokens must be [B, " + std::to_string(n) + ", " +
                std::to_string(c_.token_dim) + "], got " + shape_str(tokens.sizes()));
  if (unknown.sizes() != at::IntArrayRef({b, n}))
    throw Error("MAR: the unknown-token mask must be [B, " + std::to_string(n) + "]");
  if (class_emb.sizes() != at::IntArrayRef({b, c_.encoder_dim}))
    throw Error("MAR: the class embedding must be [B, " + std::to_string(c_.encoder_dim) + "]");
  const auto known = unknown.to(at::kBool).logical_not();
  const auto counts = known.sum(1);
  if (b > 1 && !counts.eq(counts[0]).all().item<bool>())
    throw Error("MAR: every row must know as many tokens");
  const auto keep = at::cat({at::ones({b, c_.buffer_size}, known.options()), known}, 1);
  return decode(encode(tokens, keep, class_emb), keep);
}

}  // namespace adtree::model
