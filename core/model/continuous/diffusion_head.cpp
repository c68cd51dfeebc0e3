#include "model/continuous/diffusion_head.h"

#include <cmath>

#include "util/error.h"

namespace adtree::model {

std::vector<ParamSpec> diffusion_head_param_specs(const DiffusionHeadConfig& c) {
  const int64_t w = c.width;
  std::vector<ParamSpec> s = {
      {"input_proj.weight", {w, c.token_dim}},
      {"input_proj.bias", {w}, Init::Zeros},
      {"time_embed.0.weight", {w, c.freq_dim}},
      {"time_embed.0.bias", {w}, Init::Zeros},
      {"time_embed.2.weight", {w, w}},
      {"time_embed.2.bias", {w}, Init::Zeros},
      {"cond_embed.weight", {w, c.cond_dim}},
      {"cond_embed.bias", {w}, Init::Zeros},
      {"final.ada.weight", {2 * w, w}, Init::Zeros},
      {"final.ada.bias", {2 * w}, Init::Zeros},
      {"final.linear.weight", {2 * c.token_dim, w}, Init::Zeros},
      {"final.linear.bias", {2 * c.token_dim}, Init::Zeros},
  };
  for (int64_t i = 0; i < c.blocks; ++i) {
    const std::string p = "blocks." + std::to_string(i) + ".";
    s.push_back({p + "ln.weight", {w}, Init::Ones});
    s.push_back({p + "ln.bias", {w}, Init::Zeros});
    s.push_back({p + "mlp.0.weight", {w, w}});
    s.push_back({p + "mlp.0.bias", {w}, Init::Zeros});
    s.push_back({p + "mlp.2.weight", {w, w}});
    s.push_back({p + "mlp.2.bias", {w}, Init::Zeros});
    // Zero-initialised modulation: every block starts as the identity (adaLN-Zero).
    s.push_back({p + "ada.weight", {3 * w, w}, Init::Zeros});
    s.push_back({p + "ada.bias", {3 * w}, Init::Zeros});
  }
  return s;
}

DiffusionHead::DiffusionHead(DiffusionHeadConfig c, const TensorMap& weights) : c_(c) {
  require_params(diffusion_head_param_specs(c_), weights, "diffusion head weights");
  for (const auto& [k, t] : weights) w_.emplace(k, t.to(at::kFloat));
}

at::Tensor DiffusionHead::linear(const at::Tensor& x, const std::string& name) const {
  return at::linear(x, w_.at(name + ".weight"), w_.at(name + ".bias"));
}

at::Tensor DiffusionHead::time_embedding(const at::Tensor& t, int64_t dim) {
  const int64_t half = dim / 2;
  const auto freqs = at::exp(-std::log(10000.0) * at::arange(half, at::kFloat) / double(half));
  const auto args = t.to(at::kFloat).unsqueeze(1) * freqs.unsqueeze(0);
  return at::cat({at::cos(args), at::sin(args)}, 1);
}

at::Tensor DiffusionHead::forward(const at::Tensor& x, const at::Tensor& t,
                                  const at::Tensor& z) const {
  const int64_t w = c_.width;
  at::Tensor h = linear(x.to(at::kFloat), "input_proj");
  at::Tensor y =
      linear(at::silu(linear(time_embedding(t, c_.freq_dim), "time_embed.0")), "time_embed.2") +
      linear(z.to(at::kFloat), "cond_embed");
  const at::Tensor act = at::silu(y);
  for (int64_t i = 0; i < c_.blocks; ++i) {
    const std::string p = "blocks." + std::to_string(i) + ".";
    const auto mod = linear(act, p + "ada").split(w, 1);  // shift, scale, gate
    // fp32 norms: under bf16 autocast h arrives in bf16, which the CPU layer_norm cannot mix
    // with fp32 weights (and the statistics want fp32 anyway).
    auto n =
        at::layer_norm(h.to(at::kFloat), {w}, w_.at(p + "ln.weight"), w_.at(p + "ln.bias"), 1e-6);
    n = n * (1 + mod[1]) + mod[0];
    h = h + mod[2] * linear(at::silu(linear(n, p + "mlp.0")), p + "mlp.2");
  }
  const auto mod = linear(act, "final.ada").split(w, 1);  // shift, scale
  auto n = at::layer_norm(h.to(at::kFloat), {w}, {}, {}, 1e-6);
  return linear(n * (1 + mod[1]) + mod[0], "final.linear");
}

at::Tensor DiffusionHead::forward_cfg(const at::Tensor& x, const at::Tensor& t, const at::Tensor& z,
                                      double cfg) const {
  if (x.size(0) % 2 != 0) throw Error("a CFG batch has conditional and unconditional halves");
  const int64_t half = x.size(0) / 2, D = c_.token_dim;
  const auto out = forward(x, t, z);
  const auto eps = out.narrow(1, 0, D), rest = out.narrow(1, D, D);
  const auto cond = eps.narrow(0, 0, half), uncond = eps.narrow(0, half, half);
  const auto mixed = uncond + cfg * (cond - uncond);
  return at::cat({at::cat({mixed, mixed}, 0), rest}, 1);
}

}  // namespace adtree::model
