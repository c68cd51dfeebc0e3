#include "model/continuous/diffusion_schedule.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace adtree::model {

namespace {

// alpha_bar of the cosine schedule at training step t of T (Nichol & Dhariwal, eq. 17).
double cosine_alpha_bar(double t, double T) {
  constexpr double s = 0.008;
  const double f = std::cos((t / T + s) / (1.0 + s) * M_PI / 2.0);
  return f * f;
}

}  // namespace

DiffusionSchedule::DiffusionSchedule(int train_steps, int sample_steps, double x0_bound)
    : x0_bound_(x0_bound) {
  if (train_steps < 1 || sample_steps < 1 || sample_steps > train_steps) {
    throw Error("a diffusion schedule needs 1 <= sample_steps <= train_steps");
  }
  if (!(x0_bound >= 0) || !std::isfinite(x0_bound)) {
    throw Error("a diffusion schedule's x0 bound must be finite and >= 0");
  }
  // The training schedule: beta_t = min(1 - abar(t+1) / abar(t), 0.999), abar_t = prod (1 - beta).
  std::vector<double> abar_train(static_cast<size_t>(train_steps));
  double a = 1.0;
  for (int t = 0; t < train_steps; ++t) {
    const double b = std::min(
        1.0 - cosine_alpha_bar(t + 1, train_steps) / cosine_alpha_bar(t, train_steps), 0.999);
    a *= 1.0 - b;
    abar_train[size_t(t)] = a;
  }
  // Respaced: sample_steps training steps evenly spread, the betas recomputed from their abar.
  // As MAR's space_timesteps: a running sum of the stride, rounded half to even (Python's round;
  // at 25 steps the fifth lands on 166.5, which is 166 there).
  const double stride = sample_steps == 1 ? 0.0 : double(train_steps - 1) / (sample_steps - 1);
  double frac = 0.0;
  for (int k = 0; k < sample_steps; ++k, frac += stride) {
    const int t = int(std::nearbyint(frac));  // the default rounding mode: half to even
    if (timesteps_.empty() || timesteps_.back() != t) timesteps_.push_back(t);
  }
  double prev = 1.0;
  for (int t : timesteps_) {
    alpha_bar_.push_back(abar_train[size_t(t)]);
    beta_.push_back(1.0 - abar_train[size_t(t)] / prev);
    prev = abar_train[size_t(t)];
  }
  for (size_t k = 0; k < alpha_bar_.size(); ++k) {
    const double ab = alpha_bar_[k], ab_prev = k == 0 ? 1.0 : alpha_bar_[k - 1], b = beta_[k];
    const double var = b * (1.0 - ab_prev) / (1.0 - ab);  // beta~_t
    coef_x0_.push_back(b * std::sqrt(ab_prev) / (1.0 - ab));
    coef_xt_.push_back((1.0 - ab_prev) * std::sqrt(1.0 - b) / (1.0 - ab));
    post_log_var_.push_back(var);
  }
  // The first posterior variance is 0: its log is clipped to the next one's (as improved DDPM).
  for (size_t k = 0; k < post_log_var_.size(); ++k) {
    const double v = k == 0 && post_log_var_.size() > 1 ? post_log_var_[1] : post_log_var_[k];
    post_log_var_[k] = std::log(std::max(v, 1e-20));
  }
}

DiffusionSchedule DiffusionSchedule::with_fixed_variance() const {
  DiffusionSchedule s = *this;
  s.fixed_variance_ = true;
  return s;
}

void DiffusionSchedule::reverse_step(int k, const float* x_t, const float* eps, const float* v,
                                     int dim, float* mean, float* log_std) const {
  const double ab = alpha_bar_[size_t(k)];
  const double sa = std::sqrt(ab), s1a = std::sqrt(1.0 - ab);
  const double min_log = post_log_var_[size_t(k)], max_log = std::log(beta_[size_t(k)]);
  for (int d = 0; d < dim; ++d) {
    double x0 = (double(x_t[d]) - s1a * double(eps[d])) / sa;
    if (x0_bound_ > 0) x0 = std::clamp(x0, -x0_bound_, x0_bound_);
    mean[d] = float(coef_x0_[size_t(k)] * x0 + coef_xt_[size_t(k)] * double(x_t[d]));
    const double frac = v == nullptr || fixed_variance_ ? 0.0 : (double(v[d]) + 1.0) / 2.0;
    log_std[d] = float(0.5 * (frac * max_log + (1.0 - frac) * min_log));
  }
}

void DiffusionSchedule::add_noise(int k, const float* x0, const float* noise, int dim,
                                  float* x_t) const {
  const double sa = std::sqrt(alpha_bar_[size_t(k)]), s1a = std::sqrt(1.0 - alpha_bar_[size_t(k)]);
  for (int d = 0; d < dim; ++d) x_t[d] = float(sa * double(x0[d]) + s1a * double(noise[d]));
}

}  // namespace adtree::model
