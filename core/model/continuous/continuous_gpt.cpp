#include "model/continuous/continuous_gpt.h"

#include <c10/core/InferenceMode.h>

#include <nlohmann/json.hpp>

#include <cmath>

#include "util/error.h"
#include "util/json_int.h"

namespace adtree::model {

namespace {

constexpr const char* kContinuousCfg = "continuous model config: ";

}  // namespace

void ContinuousConfig::validate() const {
  backbone.validate();
  auto need = [](bool ok, const std::string& msg) {
    if (!ok) throw Error(std::string(kContinuousCfg) + msg);
  };
  need(head.token_dim > 0 && head.token_dim <= 1024, "token_dim must be in 1..1024");
  need(head.cond_dim == backbone.dim, "the head's cond_dim must equal the backbone's dim");
  need(head.width > 0 && head.width <= 65536, "the head's width must be in 1..65536");
  need(head.blocks > 0 && head.blocks <= 64, "the head's blocks must be in 1..64");
  need(head.freq_dim > 0 && head.freq_dim % 2 == 0 && head.freq_dim <= 4096,
       "the head's freq_dim must be even, in 2..4096");
  need(train_steps >= 1 && train_steps <= 100000, "train_steps must be in 1..100000");
  need(sample_steps >= 1 && sample_steps <= train_steps, "sample_steps must be in 1..train_steps");
  need(std::isfinite(x0_bound) && x0_bound >= 0 && x0_bound <= 1e6,
       "x0_bound must be a number in [0, 1e6]");
}

nlohmann::json ContinuousConfig::to_json() const {
  return nlohmann::json{{"backbone", backbone.to_json()},
                        {"head",
                         {{"token_dim", head.token_dim},
                          {"width", head.width},
                          {"blocks", head.blocks},
                          {"freq_dim", head.freq_dim}}},
                        {"train_steps", train_steps},
                        {"sample_steps", sample_steps},
                        {"x0_bound", x0_bound}};
}

ContinuousConfig ContinuousConfig::from_json(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("backbone") || !j.contains("head")) {
    throw Error(std::string(kContinuousCfg) + "expected an object with 'backbone' and 'head'");
  }
  ContinuousConfig c;
  c.backbone = GptConfig::from_json(j.at("backbone"));
  const auto& h = j.at("head");
  c.head.token_dim = json_int(h, "token_dim", c.head.token_dim);
  c.head.width = json_int(h, "width", c.head.width);
  c.head.blocks = json_int(h, "blocks", c.head.blocks);
  c.head.freq_dim = json_int(h, "freq_dim", c.head.freq_dim);
  c.head.cond_dim = c.backbone.dim;
  c.train_steps = json_int<int>(j, "train_steps", c.train_steps);
  c.sample_steps = json_int<int>(j, "sample_steps", c.sample_steps);
  if (j.contains("x0_bound")) {
    if (!j.at("x0_bound").is_number())
      throw Error(std::string(kContinuousCfg) + "x0_bound must be a number");
    c.x0_bound = j.at("x0_bound").get<double>();
  }
  c.validate();
  return c;
}

std::vector<ParamSpec> continuous_param_specs(const ContinuousConfig& cfg) {
  cfg.validate();
  std::vector<ParamSpec> s;
  for (auto p : gpt_param_specs(cfg.backbone)) {
    p.name = "backbone." + p.name;
    s.push_back(std::move(p));
  }
  s.push_back({"token_proj.weight", {cfg.backbone.dim, cfg.token_dim()}});
  s.push_back({"token_proj.bias", {cfg.backbone.dim}, Init::Zeros});
  for (auto p : diffusion_head_param_specs(cfg.head)) {
    p.name = "head." + p.name;
    s.push_back(std::move(p));
  }
  return s;
}

TensorMap sub_map(const TensorMap& w, const std::string& prefix) {
  TensorMap out;
  for (const auto& [k, t] : w) {
    if (k.compare(0, prefix.size(), prefix) == 0) out.emplace(k.substr(prefix.size()), t);
  }
  return out;
}

ContinuousGpt::ContinuousGpt(ContinuousConfig cfg, const TensorMap& weights, at::Device device,
                             at::ScalarType dtype, bool inference)
    : cfg_(std::move(cfg)), schedule_(cfg_.train_steps, cfg_.sample_steps, cfg_.x0_bound) {
  cfg_.validate();
  require_params(continuous_param_specs(cfg_), weights, "continuous model weights");
  gpt_ =
      std::make_unique<Gpt>(cfg_.backbone, sub_map(weights, "backbone."), device, dtype, inference);
  // The head and the projection stay fp32: they are small, and the head's 25-100 reverse steps
  // per token would compound a bf16 rounding.
  auto head_w = sub_map(weights, "head.");
  for (auto& [k, t] : head_w) t = inference ? t.to(device, at::kFloat) : t;
  head_ = std::make_unique<DiffusionHead>(cfg_.head, head_w);
  proj_w_ = weights.at("token_proj.weight");
  proj_b_ = weights.at("token_proj.bias");
  if (inference) {
    proj_w_ = proj_w_.to(device, at::kFloat);
    proj_b_ = proj_b_.to(device, at::kFloat);
  }
}

DiffusionSchedule ContinuousGpt::schedule_with(int sample_steps, bool fixed_variance) const {
  if (sample_steps < 1 || sample_steps > cfg_.train_steps) {
    throw Error("diffusion steps must be in 1.." + std::to_string(cfg_.train_steps) + ", got " +
                std::to_string(sample_steps));
  }
  DiffusionSchedule s(cfg_.train_steps, sample_steps, cfg_.x0_bound);
  return fixed_variance ? s.with_fixed_variance() : s;
}

at::Tensor ContinuousGpt::embed(const at::Tensor& tokens) const {
  if (tokens.dim() != 3 || tokens.size(2) != cfg_.token_dim()) {
    throw Error("continuous tokens must be [B, q, " + std::to_string(cfg_.token_dim()) + "], got " +
                shape_str(tokens.sizes()));
  }
  return at::linear(tokens.to(proj_w_.device(), at::kFloat), proj_w_, proj_b_);
}

at::Tensor ContinuousGpt::prefill(KvCache& cache, const Condition& cond) const {
  const auto out = gpt_->prefill(cache, cond);
  return out.hidden.select(1, out.hidden.size(1) - 1).to(at::kFloat);
}

at::Tensor ContinuousGpt::forward_tokens(KvCache& cache, const at::Tensor& tokens,
                                         int64_t first_index) const {
  const int64_t C = cfg_.backbone.cond_tokens(), q = tokens.size(1);
  auto pos = at::arange(C + first_index, C + first_index + q, at::TensorOptions().dtype(at::kLong));
  return gpt_->forward(embed(tokens), pos, &cache, {}, {}, -1).hidden.to(at::kFloat);
}

}  // namespace adtree::model
