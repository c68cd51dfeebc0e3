#include "train/optimizer.h"

#include <cmath>

#include "train/config.h"
#include "util/error.h"

namespace adtree::train {

Params Params::from(const TensorMap& init, at::Device device) {
  Params p;
  for (const auto& [name, t] : init) {
    auto c = t.detach().to(device, at::kFloat).clone().contiguous();
    c.set_requires_grad(true);
    p.tensors.emplace(name, c);
  }
  return p;
}

int64_t Params::count() const {
  int64_t n = 0;
  for (const auto& [k, t] : tensors) n += t.numel();
  return n;
}

at::Device Params::device() const {
  return tensors.empty() ? at::Device(at::kCPU) : tensors.begin()->second.device();
}

void Params::zero_grad() {
  for (auto& [k, t] : tensors) {
    if (t.grad().defined()) t.mutable_grad().zero_();
  }
}

TensorMap Params::detached() const {
  TensorMap out;
  for (const auto& [k, t] : tensors) out.emplace(k, t.detach().clone());
  return out;
}

AdamW::AdamW(Params& params, AdamWConfig cfg, std::set<std::string> no_decay)
    : params_(params), cfg_(cfg), no_decay_(std::move(no_decay)) {
  for (const auto& [name, t] : params_.tensors) {
    m_.emplace(name, at::zeros_like(t.detach()));
    v_.emplace(name, at::zeros_like(t.detach()));
  }
}

void AdamW::step(double lr) {
  at::NoGradGuard no_grad;
  ++t_;
  const double bc1 = 1.0 - std::pow(cfg_.beta1, double(t_));
  const double bc2 = 1.0 - std::pow(cfg_.beta2, double(t_));
  for (auto& [name, p] : params_.tensors) {
    const auto& g = p.grad();
    if (!g.defined()) continue;
    auto w = p.detach();
    if (p.dim() >= 2 && cfg_.weight_decay > 0 && !no_decay_.count(name))
      w.mul_(1.0 - lr * cfg_.weight_decay);
    auto& m = m_.at(name);
    auto& v = v_.at(name);
    m.mul_(cfg_.beta1).add_(g, 1.0 - cfg_.beta1);
    v.mul_(cfg_.beta2).addcmul_(g, g, 1.0 - cfg_.beta2);
    auto denom = (v.sqrt() / std::sqrt(bc2)).add_(cfg_.eps);
    w.addcdiv_(m, denom, -lr / bc1);
  }
}

void AdamW::save_state(TensorMap& out) const {
  for (const auto& [name, t] : m_) out.emplace("adam.m." + name, t);
  for (const auto& [name, t] : v_) out.emplace("adam.v." + name, t);
  out.emplace("adam.t", at::tensor({t_}, at::TensorOptions().dtype(at::kLong)));
}

void AdamW::load_state(const TensorMap& in, const std::string& where) {
  auto take = [&](const std::string& key, at::Tensor& dst) {
    auto it = in.find(key);
    if (it == in.end()) throw Error(where + ": the checkpoint lacks optimiser state '" + key + "'");
    if (it->second.sizes() != dst.sizes()) {
      throw Error(where + ": optimiser state '" + key + "' has shape " +
                  model::shape_str(it->second.sizes()) + ", expected " +
                  model::shape_str(dst.sizes()));
    }
    dst.copy_(it->second);
  };
  for (auto& [name, t] : m_) take("adam.m." + name, t);
  for (auto& [name, t] : v_) take("adam.v." + name, t);
  auto it = in.find("adam.t");
  if (it == in.end()) throw Error(where + ": the checkpoint lacks the optimiser step count");
  t_ = it->second.item<int64_t>();
}

double clip_grad_norm(Params& params, double max_norm) {
  at::NoGradGuard no_grad;
  double sq = 0.0;
  for (auto& [k, t] : params.tensors) {
    if (t.grad().defined()) sq += t.grad().to(at::kDouble).pow(2).sum().item<double>();
  }
  const double norm = std::sqrt(sq);
  if (max_norm > 0 && norm > max_norm) {
    const double scale = max_norm / (norm + 1e-6);
    for (auto& [k, t] : params.tensors) {
      if (t.grad().defined()) t.mutable_grad().mul_(scale);
    }
  }
  return norm;
}

double LrSchedule::at(int64_t step) const {
  if (warmup > 0 && step < warmup) return peak * double(step + 1) / double(warmup);
  if (shape == "constant") return peak;
  const double span = double(std::max<int64_t>(1, total - warmup));
  const double x = std::min(1.0, double(step - warmup) / span);
  const double floor = peak * min_ratio;
  if (shape == "linear") return floor + (peak - floor) * (1.0 - x);
  return floor + (peak - floor) * 0.5 * (1.0 + std::cos(M_PI * x));
}

void LrSchedule::validate(const std::string& what) const {
  require(peak > 0 && std::isfinite(peak), what, "the learning rate must be a positive number");
  require(warmup >= 0, what, "warmup must not be negative");
  require(min_ratio >= 0 && min_ratio <= 1, what, "min_lr_ratio must be in [0, 1]");
  require(shape == "cosine" || shape == "linear" || shape == "constant", what,
          "schedule must be cosine, linear or constant, got '" + shape + "'");
}

}  // namespace adtree::train
