#include "decode/continuous/token_density.h"

#include <cmath>

#include "util/error.h"

namespace adtree::decode {

namespace {
constexpr double kLogTwoPi = 1.8378770664093453;
}

double standard_normal(Rng& rng) {
  const double u1 = 1.0 - rng.uniform();  // (0, 1]: log stays finite
  const double u2 = rng.uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

DiagGaussian::DiagGaussian(Token mean, std::vector<double> std)
    : mean_(std::move(mean)), std_(std::move(std)) {
  if (mean_.size() != std_.size() || mean_.empty()) {
    throw Error("a Gaussian token density needs one standard deviation per dimension");
  }
  for (double s : std_) {
    if (!(s > 0.0) || !std::isfinite(s)) throw Error("a Gaussian's standard deviation must be > 0");
  }
}

double DiagGaussian::log_pdf(const Token& x) const {
  double lp = 0.0;
  for (size_t d = 0; d < mean_.size(); ++d) {
    const double z = (x[d] - mean_[d]) / std_[d];
    lp += -0.5 * (z * z + kLogTwoPi) - std::log(std_[d]);
  }
  return lp;
}

Token DiagGaussian::sample(Rng& rng) const {
  Token x(mean_.size());
  for (size_t d = 0; d < x.size(); ++d) x[d] = mean_[d] + std_[d] * standard_normal(rng);
  return x;
}

}  // namespace adtree::decode
