// CSpD's accept / residual step (core/decode/continuous/cspd_rule.h) against exact densities:
// - with one denoising step (S = 1) it is speculative sampling of a continuous density, so the
//   emitted tokens must follow the target: Gaussian and Gaussian-mixture heads, chi-square over
//   equiprobable bins of the target; a rule that drops the residual (a fresh target sample on a
//   rejection) fails the same test, and the acceptance rate is 1 - TV(p, q);
// - the factor S is the ratio of the aligned trajectories' densities, each model on its own
//   trajectory from the same noises: checked step by step against the Gaussian log-densities
//   of a three-step toy head with nonlinear means; the reciprocal (the released code's) fails.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <vector>

#include "decode/continuous/cspd_rule.h"
#include "util/error.h"

using namespace adtree;
using namespace adtree::decode;

namespace {

// A 1-D Gaussian mixture with exact density, CDF and sampling.
class Mixture : public TokenDensity {
 public:
  struct Part {
    double w, mu, sd;
  };
  explicit Mixture(std::vector<Part> parts) : parts_(std::move(parts)) {}
  double log_pdf(const Token& x) const override {
    double p = 0.0;
    for (const auto& c : parts_) {
      const double z = (x[0] - c.mu) / c.sd;
      p += c.w * std::exp(-0.5 * z * z) / (c.sd * std::sqrt(2.0 * M_PI));
    }
    return std::log(p);
  }
  Token sample(Rng& rng) const override {
    double u = rng.uniform();
    for (const auto& c : parts_) {
      if (u < c.w || &c == &parts_.back()) return {c.mu + c.sd * standard_normal(rng)};
      u -= c.w;
    }
    return {0.0};
  }
  double cdf(double x) const {
    double f = 0.0;
    for (const auto& c : parts_) f += c.w * 0.5 * std::erfc(-(x - c.mu) / (c.sd * std::sqrt(2.0)));
    return f;
  }

 private:
  std::vector<Part> parts_;
};

// Chi-square of `samples` over 40 bins of equal target mass (cdf); 39 degrees of freedom, whose
// 0.9999 quantile is 80.1.
double chi_square(const std::vector<double>& samples, const std::function<double(double)>& cdf) {
  constexpr int kBins = 40;
  std::vector<double> count(kBins, 0.0);
  for (double x : samples) count[std::min(kBins - 1, int(cdf(x) * kBins))] += 1.0;
  const double expect = double(samples.size()) / kBins;
  double chi2 = 0.0;
  for (double c : count) chi2 += (c - expect) * (c - expect) / expect;
  return chi2;
}

// Emits `n` tokens with the rule from drafts of q, or with a wrong rule when `drop_residual`
// (a rejection emits a fresh target sample); returns them and the acceptance rate.
std::vector<double> emit(const TokenDensity& p, const TokenDensity& q, int n, bool drop_residual,
                         double& accept_rate) {
  Rng rng(7);
  std::vector<double> out;
  int accepted = 0;
  for (int i = 0; i < n; ++i) {
    const Token x0 = q.sample(rng);
    CspdVerdict v = cspd_verify(x0, p, q, /*log_s=*/0.0, rng, 1000);
    if (!v.accepted && drop_residual) v.token = p.sample(rng);
    accepted += v.accepted;
    EXPECT_FALSE(v.exhausted);
    out.push_back(v.token[0]);
  }
  accept_rate = double(accepted) / n;
  return out;
}

// 1 - TV(p, q) = integral of min(p, q), by the midpoint rule on [-12, 12].
double overlap(const TokenDensity& p, const TokenDensity& q) {
  double s = 0.0;
  const double h = 1e-3;
  for (double x = -12.0 + h / 2; x < 12.0; x += h) {
    s += std::min(std::exp(p.log_pdf({x})), std::exp(q.log_pdf({x}))) * h;
  }
  return s;
}

double normal_cdf(double x, double mu, double sd) {
  return 0.5 * std::erfc(-(x - mu) / (sd * std::sqrt(2.0)));
}

constexpr int kDraws = 100000;
constexpr double kChi2Limit = 80.1;

}  // namespace

TEST(CspdRule, OneStepGaussianHeadsEmitTheTargetsDistribution) {
  const DiagGaussian p({0.5}, {1.0}), q({-0.3}, {0.7});
  double rate = 0.0;
  const auto xs = emit(p, q, kDraws, false, rate);
  EXPECT_LT(chi_square(xs, [](double x) { return normal_cdf(x, 0.5, 1.0); }), kChi2Limit);
  EXPECT_NEAR(rate, overlap(p, q), 0.01);
}

TEST(CspdRule, OneStepMixtureHeadsEmitTheTargetsDistribution) {
  const Mixture p({{0.3, -2.0, 0.5}, {0.7, 1.0, 0.8}}), q({{0.6, -1.5, 0.7}, {0.4, 1.5, 0.6}});
  double rate = 0.0;
  const auto xs = emit(p, q, kDraws, false, rate);
  EXPECT_LT(chi_square(xs, [&](double x) { return p.cdf(x); }), kChi2Limit);
  EXPECT_NEAR(rate, overlap(p, q), 0.01);
}

// The test has the power to see a wrong rule: emitting a fresh target sample on a rejection
// instead of the residual over-weights where the two densities overlap.
TEST(CspdRule, DroppingTheResidualFailsTheSameTest) {
  const Mixture p({{0.3, -2.0, 0.5}, {0.7, 1.0, 0.8}}), q({{0.6, -1.5, 0.7}, {0.4, 1.5, 0.6}});
  double rate = 0.0;
  const auto xs = emit(p, q, kDraws, true, rate);
  EXPECT_GT(chi_square(xs, [&](double x) { return p.cdf(x); }), 10 * kChi2Limit);
}

// The residual alone is max(0, p - q) normalised: its samples never land where q > p's scale.
TEST(CspdRule, TheResidualIsWhereTheTargetExceedsTheDraft) {
  const DiagGaussian p({1.0}, {1.0}), q({0.0}, {1.0});
  Rng rng(3);
  // max(0, p - q) for these two is positive exactly for x > 0.5.
  for (int i = 0; i < 20000; ++i) {
    const auto v = cspd_residual(p, q, 0.0, rng, 1000);
    ASSERT_FALSE(v.exhausted);
    ASSERT_GT(v.token[0], 0.5);
  }
}

namespace {

// A toy diffusion head: K steps x_{t-1} = mu(x_t) + sigma_t eps_t with a nonlinear mean, per model.
struct ToyHead {
  double a, b;                // mu(x) = a tanh(x) + b
  std::vector<double> sigma;  // per step, t = K .. 1
  double mean(double x) const { return a * std::tanh(x) + b; }
};

double gauss_log_pdf(double x, double mu, double sd) {
  const double z = (x - mu) / sd;
  return -0.5 * z * z - 0.5 * std::log(2.0 * M_PI) - std::log(sd);
}

}  // namespace

// S is what the aligned trajectories' densities give: every step's density of each model on its
// own trajectory, from the same x_T and the same eps_t, with the last step evaluated at the draft's
// token. The product over the steps before the last is prod sigma_q / sigma_p (draft over target).
TEST(CspdRule, TheScaleIsTheAlignedTrajectoriesDensityRatio) {
  const ToyHead q{0.8, 0.1, {0.9, 0.6, 0.3}}, p{1.1, -0.2, {0.7, 0.5, 0.4}};
  Rng rng(11);
  for (int trial = 0; trial < 50; ++trial) {
    double xq = standard_normal(rng), xp = xq;  // the same x_T
    double log_traj_p = 0.0, log_traj_q = 0.0;
    std::vector<double> log_sq, log_sp;
    const size_t K = q.sigma.size();
    for (size_t k = 0; k + 1 < K; ++k) {  // every step but the last
      const double eps = standard_normal(rng);
      const double next_q = q.mean(xq) + q.sigma[k] * eps, next_p = p.mean(xp) + p.sigma[k] * eps;
      log_traj_q += gauss_log_pdf(next_q, q.mean(xq), q.sigma[k]);
      log_traj_p += gauss_log_pdf(next_p, p.mean(xp), p.sigma[k]);
      log_sq.push_back(std::log(q.sigma[k]));
      log_sp.push_back(std::log(p.sigma[k]));
      xq = next_q, xp = next_p;
    }
    const double eps = standard_normal(rng);
    const Token x0{q.mean(xq) + q.sigma[K - 1] * eps};  // the draft's token
    const DiagGaussian q_last({q.mean(xq)}, {q.sigma[K - 1]}),
        p_last({p.mean(xp)}, {p.sigma[K - 1]});
    const double want = (log_traj_p + p_last.log_pdf(x0)) - (log_traj_q + q_last.log_pdf(x0));
    const double log_s = aligned_log_scale(log_sq, log_sp);
    EXPECT_NEAR(log_s + p_last.log_pdf(x0) - q_last.log_pdf(x0), want, 1e-9);
    // The reciprocal (the released code's F) is another number whenever the stds differ.
    EXPECT_GT(std::abs(-log_s + p_last.log_pdf(x0) - q_last.log_pdf(x0) - want), 0.1);
  }
}

// The released code's relaxation widens the densities of the test alone: drafts stand more often,
// and a refused one is replaced from the models' own last steps, so the replacement lies where
// the (narrow) target puts its mass, not across the widened Gaussian. Widening the residual's
// densities too (this rule's earlier form) spreads replacements over the wide one and fails.
TEST(CspdRule, TheRelaxedTestKeepsTheResidualAtTheTargetsLastStep) {
  const DiagGaussian p({1.0}, {0.01}), q({0.97}, {0.01});
  const DiagGaussian p_wide({1.0}, {0.3}), q_wide({0.97}, {0.01 * 30});
  Rng rng(5);
  int strict_accepts = 0, relaxed_accepts = 0, replaced = 0;
  for (int i = 0; i < 20000; ++i) {
    const Token x0 = q.sample(rng);
    strict_accepts += cspd_verify(x0, p, q, 0.0, rng, 1000).accepted;
    const auto v = cspd_verify_relaxed(x0, p_wide, q_wide, p, q, 0.0, rng, 1000);
    relaxed_accepts += v.accepted;
    if (v.accepted) continue;
    ++replaced;
    ASSERT_NEAR(v.token[0], 1.0, 0.06);  // six of the target's last-step stds
  }
  EXPECT_GT(relaxed_accepts, strict_accepts + 10000);
  EXPECT_GT(replaced, 50);
  // Same uniforms, same verdicts: with unwidened test densities the relaxed rule is the rule.
  Rng source(9), a(4), b(4);
  for (int i = 0; i < 2000; ++i) {
    const Token x0 = q.sample(source);
    const auto u = cspd_verify(x0, p, q, 0.2, a, 1000);
    const auto w = cspd_verify_relaxed(x0, p, q, p, q, 0.2, b, 1000);
    ASSERT_EQ(u.accepted, w.accepted);
    ASSERT_EQ(u.token, w.token);
  }
}

TEST(CspdRule, BadInputsAreErrors) {
  EXPECT_THROW(DiagGaussian({0.0, 1.0}, {1.0}), Error);
  EXPECT_THROW(DiagGaussian({0.0}, {0.0}), Error);
  EXPECT_THROW(aligned_log_scale({0.1, 0.2}, {0.1}), Error);
}
