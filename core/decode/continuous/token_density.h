// The densities CSpD's accept / residual step works with (issue "CSpD", part 4): a continuous
// token is a vector of D numbers, and the last denoising step of a diffusion head gives it a
// diagonal Gaussian. The rule is written against this small interface, so the tests can hand it
// densities that are exact (Gaussian mixtures) and check the emitted tokens against them.
#pragma once
#include <cstdint>
#include <vector>

#include "util/rng.h"

namespace adtree::decode {

using Token = std::vector<double>;

class TokenDensity {
 public:
  virtual ~TokenDensity() = default;
  virtual double log_pdf(const Token& x) const = 0;
  virtual Token sample(Rng& rng) const = 0;
};

// N(mean, diag(std^2)).
class DiagGaussian : public TokenDensity {
 public:
  DiagGaussian(Token mean, std::vector<double> std);
  double log_pdf(const Token& x) const override;
  Token sample(Rng& rng) const override;
  const Token& mean() const { return mean_; }
  const std::vector<double>& std_dev() const { return std_; }

 private:
  Token mean_;
  std::vector<double> std_;
};

// A standard normal draw from two of the generator's uniforms (Box-Muller, one of the pair kept).
double standard_normal(Rng& rng);

}  // namespace adtree::decode
