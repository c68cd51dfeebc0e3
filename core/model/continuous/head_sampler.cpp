#include "model/continuous/head_sampler.h"

#include <cmath>

#include "util/error.h"

namespace adtree::model {

HeadTrajectory sample_head(const DiffusionHead& head, const DiffusionSchedule& schedule,
                           const at::Tensor& z, const at::Tensor& z_uncond, double cfg,
                           double temperature, const at::Tensor& x_T, const at::Tensor& noise) {
  const int64_t B = x_T.size(0), D = head.config().token_dim, K = schedule.sample_steps();
  if (noise.dim() != 3 || noise.size(0) != B || noise.size(1) != K || noise.size(2) != D) {
    throw Error("the head's noises must be [B, " + std::to_string(K) + ", " + std::to_string(D) +
                "]");
  }
  if (!(temperature > 0)) throw Error("the head's temperature must be > 0");
  const bool guided = z_uncond.defined() && cfg != 1.0;
  const at::Tensor zz = guided ? at::cat({z, z_uncond}) : z;
  at::Tensor x = x_T.to(at::kFloat).contiguous();
  HeadTrajectory out;
  out.log_std_before_last = at::zeros({B}, at::kDouble);
  const double log_temp = std::log(temperature);
  for (int64_t step = 0; step < K; ++step) {
    const int k = int(K - 1 - step);  // the schedule's index: k = 0 makes x0
    const auto t = at::full({guided ? 2 * B : B}, schedule.timesteps()[size_t(k)], at::kLong);
    at::Tensor o = guided ? head.forward_cfg(at::cat({x, x}), t, zz, cfg) : head.forward(x, t, zz);
    o = o.narrow(0, 0, B).contiguous();
    const auto eps = o.narrow(1, 0, D).contiguous(), v = o.narrow(1, D, D).contiguous();
    auto mean = at::empty({B, D}, at::kFloat), log_std = at::empty({B, D}, at::kFloat);
    for (int64_t r = 0; r < B; ++r) {
      schedule.reverse_step(k, x[r].data_ptr<float>(), eps[r].data_ptr<float>(),
                            v[r].data_ptr<float>(), int(D), mean[r].data_ptr<float>(),
                            log_std[r].data_ptr<float>());
    }
    log_std = log_std + log_temp;
    x = (mean + at::exp(log_std) * noise.select(1, step).to(at::kFloat)).contiguous();
    if (k == 0) {
      out.last_mean = mean;
      out.last_log_std = log_std;
    } else {
      out.log_std_before_last += log_std.to(at::kDouble).sum(1);
    }
  }
  out.x0 = x;
  return out;
}

}  // namespace adtree::model
