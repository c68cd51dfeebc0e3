#include "decode/continuous/head_density.h"

#include <cmath>

namespace adtree::decode {

Token token_row(const at::Tensor& t, int64_t i) {
  const auto r = t[i].to(at::kDouble).contiguous();
  return Token(r.data_ptr<double>(), r.data_ptr<double>() + r.numel());
}

DiagGaussian last_step_density(const model::HeadTrajectory& h, int64_t i, double widen) {
  auto sd = token_row(h.last_log_std, i);
  for (double& v : sd) v = std::exp(v) * widen;
  return DiagGaussian(token_row(h.last_mean, i), sd);
}

}  // namespace adtree::decode
