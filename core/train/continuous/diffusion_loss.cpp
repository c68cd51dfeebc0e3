#include "train/continuous/diffusion_loss.h"

#include <cmath>
#include <map>
#include <mutex>

#include "model/continuous/diffusion_schedule.h"

namespace adtree::train {

namespace {

// The training schedule's per-step numbers as [T] tensors: abar, log beta, the posterior's clipped
// log variance and its mean coefficients.
struct ScheduleTables {
  at::Tensor abar, log_beta, post_log_var, coef_x0, coef_xt;
};

ScheduleTables make_tables(int T) {
  const model::DiffusionSchedule s(T, T);
  std::vector<double> abar, log_beta, plv, cx0, cxt;
  for (int k = 0; k < T; ++k) {
    const double ab = s.alpha_bar(k), ab_prev = k == 0 ? 1.0 : s.alpha_bar(k - 1), b = s.beta(k);
    abar.push_back(ab);
    log_beta.push_back(std::log(b));
    plv.push_back(s.posterior_log_variance(k));
    cx0.push_back(b * std::sqrt(ab_prev) / (1.0 - ab));
    cxt.push_back((1.0 - ab_prev) * std::sqrt(1.0 - b) / (1.0 - ab));
  }
  auto t = [](const std::vector<double>& v) {
    return at::tensor(v, at::TensorOptions().dtype(at::kDouble)).to(at::kFloat);
  };
  return {t(abar), t(log_beta), t(plv), t(cx0), t(cxt)};
}

const ScheduleTables& tables(int T) {
  static std::mutex mu;
  static std::map<int, ScheduleTables> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(T);
  if (it == cache.end()) it = cache.emplace(T, make_tables(T)).first;
  return it->second;
}

at::Tensor pick(const at::Tensor& table, const at::Tensor& t, const at::Tensor& like) {
  return table.index_select(0, t.to(at::kLong).cpu()).to(like.device()).unsqueeze(1);
}

}  // namespace

DiffusionLoss diffusion_loss(const model::DiffusionHead& head, int T, const at::Tensor& x0,
                             const at::Tensor& z, const at::Tensor& t, const at::Tensor& noise) {
  const auto& tab = tables(T);
  const int64_t D = head.config().token_dim;
  const auto abar = pick(tab.abar, t, x0);
  const auto x_t = abar.sqrt() * x0 + (1.0 - abar).sqrt() * noise;
  const auto out = head.forward(x_t, t, z);
  const auto eps = out.narrow(1, 0, D), v = out.narrow(1, D, D);
  const auto mse = (eps - noise).pow(2).mean();

  // The head's Gaussian with the mean frozen: only the variance learns from L_vb.
  const auto min_log = pick(tab.post_log_var, t, x0), max_log = pick(tab.log_beta, t, x0);
  const auto frac = (v + 1.0) / 2.0;
  const auto model_log_var = frac * max_log + (1.0 - frac) * min_log;
  const auto cx0 = pick(tab.coef_x0, t, x0), cxt = pick(tab.coef_xt, t, x0);
  const auto x0_pred = (x_t - (1.0 - abar).sqrt() * eps.detach()) / abar.sqrt();
  const auto model_mean = cx0 * x0_pred + cxt * x_t;
  const auto true_mean = cx0 * x0 + cxt * x_t;
  const auto kl = 0.5 * (-1.0 + model_log_var - min_log + (min_log - model_log_var).exp() +
                         (true_mean - model_mean).pow(2) * (-model_log_var).exp());
  const auto nll = 0.5 * (std::log(2.0 * M_PI) + model_log_var +
                          (x0 - model_mean).pow(2) * (-model_log_var).exp());
  const auto first = t.to(x0.device()).eq(0).unsqueeze(1);
  const auto vb = at::where(first, nll, kl).mean() / std::log(2.0);
  DiffusionLoss r;
  r.total = mse + vb;
  r.mse = mse.item<double>();
  r.vb = vb.item<double>();
  return r;
}

}  // namespace adtree::train
