// The noise schedule of the continuous family's diffusion head (issue "CSpD", part 2; MAR's
// DiffLoss, LTH14/mar diffusion/): DDPM with a cosine schedule over `train_steps`, respaced to
// `sample_steps` for sampling, epsilon prediction, and a variance learned as an interpolation
// between beta_t and the posterior's beta~_t ("learned range") or fixed to beta~_t. Written from
// the formulas (Nichol & Dhariwal 2021, eqs. 10-17); the tests check them against direct math.
#pragma once
#include <vector>

namespace adtree::model {

class DiffusionSchedule {
 public:
  // x0_bound > 0: each step's prediction of x0 is clamped to [-x0_bound, x0_bound] (the range of
  // the training tokens). The first reverse step multiplies the head's epsilon error by
  // 1 / sqrt(alpha_t) (about 1,300 at 25 steps of the cosine schedule, 350 at 100): unclamped, a
  // small head's error of 0.01 there sends the trajectory to values in the thousands. MAR does not
  // clamp; its far larger heads predict that step closely enough. 0: no clamp.
  DiffusionSchedule(int train_steps = 1000, int sample_steps = 100, double x0_bound = 0);

  // Fixed: every reverse step's variance is beta~_t, whatever a head's learned interpolation says
  // (decode/sampling.h, HeadVariance).
  DiffusionSchedule with_fixed_variance() const;
  bool fixed_variance() const { return fixed_variance_; }

  int sample_steps() const { return int(alpha_bar_.size()); }
  // The training step each sampling step stands for (ascending; index 0 is the last to run).
  const std::vector<int>& timesteps() const { return timesteps_; }
  // Of the respaced schedule, at sampling index k (k = 0 gives x0).
  double alpha_bar(int k) const { return alpha_bar_[size_t(k)]; }
  double beta(int k) const { return beta_[size_t(k)]; }
  double posterior_log_variance(int k) const { return post_log_var_[size_t(k)]; }
  double x0_bound() const { return x0_bound_; }

  // One reverse step at sampling index k: from x_t [D] and the head's epsilon prediction [D] (and,
  // for a learned variance, its interpolation output v [D] in [-1, 1]; null or a fixed-variance
  // schedule: beta~_t), the mean and
  // log std of x_{t-1}. The prediction of x0 is clamped to the bound (if one is set).
  void reverse_step(int k, const float* x_t, const float* eps, const float* v, int dim, float* mean,
                    float* log_std) const;

  // x_t = sqrt(alpha_bar) x0 + sqrt(1 - alpha_bar) noise: the forward process for training.
  void add_noise(int k, const float* x0, const float* noise, int dim, float* x_t) const;

 private:
  double x0_bound_ = 0;
  bool fixed_variance_ = false;
  std::vector<int> timesteps_;
  std::vector<double> alpha_bar_, beta_, post_log_var_, coef_x0_, coef_xt_;
};

}  // namespace adtree::model
