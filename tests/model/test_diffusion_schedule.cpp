// The continuous family's diffusion schedule (core/model/continuous/diffusion_schedule.h) against
// direct math: the respaced alpha_bar is the training schedule's at the kept steps, computed here
// from the cosine formula; the reverse step with the true noise gives the Gaussian posterior of
// x_{t-1} given x_t and x0, derived here by precision weighting (Bayes on the two Gaussians of the
// forward process) rather than by the schedule's coefficients; the last step returns x0.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "model/continuous/diffusion_schedule.h"
#include "util/error.h"

using adtree::model::DiffusionSchedule;

namespace {

double cosine_abar(int t, int T) {
  const double f = std::cos((double(t) / T + 0.008) / 1.008 * M_PI / 2.0);
  return f * f;
}

// abar of the training schedule after step t (betas capped at 0.999).
double train_abar(int t, int T) {
  double a = 1.0;
  for (int i = 0; i <= t; ++i) {
    a *= 1.0 - std::min(1.0 - cosine_abar(i + 1, T) / cosine_abar(i, T), 0.999);
  }
  return a;
}

}  // namespace

TEST(DiffusionSchedule, RespacedStepsKeepTheTrainingScheduleAtTheirSteps) {
  const DiffusionSchedule s(1000, 100);
  ASSERT_EQ(s.sample_steps(), 100);
  EXPECT_EQ(s.timesteps().front(), 0);
  EXPECT_EQ(s.timesteps()[1], 10);  // improved DDPM's "100" spacing: 0, 10, 20, ..., 999
  EXPECT_EQ(s.timesteps().back(), 999);
  for (int k : {0, 1, 37, 99}) {
    EXPECT_NEAR(s.alpha_bar(k), train_abar(s.timesteps()[size_t(k)], 1000), 1e-12) << k;
    const double prev = k == 0 ? 1.0 : s.alpha_bar(k - 1);
    EXPECT_NEAR(s.beta(k), 1.0 - s.alpha_bar(k) / prev, 1e-12) << k;
  }
  // MAR's space_timesteps adds up the stride and rounds half to even (Python's round): at 25
  // steps the stride is 41.625 and the fifth step lands on 166.5, which is 166, not 167.
  const DiffusionSchedule s25(1000, 25);
  EXPECT_EQ(s25.timesteps()[4], 166);
  EXPECT_EQ(s25.timesteps()[2], 83);  // 83.25
  EXPECT_EQ(s25.timesteps().back(), 999);
}

TEST(DiffusionSchedule, TheReverseStepIsTheGaussianPosterior) {
  const DiffusionSchedule s(1000, 50);
  const std::vector<float> x0{0.7f, -1.3f, 0.2f}, noise{0.4f, 1.1f, -0.8f};
  for (int k : {1, 10, 30, 49}) {
    std::vector<float> xt(3), mean(3), log_std(3);
    s.add_noise(k, x0.data(), noise.data(), 3, xt.data());
    s.reverse_step(k, xt.data(), noise.data(), nullptr, 3, mean.data(), log_std.data());
    // Bayes: x_{t-1} ~ N(sqrt(abar') x0, 1 - abar'), x_t | x_{t-1} ~ N(sqrt(alpha) x_{t-1}, beta).
    const double ab_prev = s.alpha_bar(k - 1), beta = s.beta(k), alpha = 1.0 - beta;
    const double precision = 1.0 / (1.0 - ab_prev) + alpha / beta;
    for (int d = 0; d < 3; ++d) {
      const double m = (std::sqrt(ab_prev) * x0[size_t(d)] / (1.0 - ab_prev) +
                        std::sqrt(alpha) * xt[size_t(d)] / beta) /
                       precision;
      EXPECT_NEAR(mean[size_t(d)], m, 2e-4 * (1.0 + std::abs(m))) << "k " << k;
      EXPECT_NEAR(2.0 * log_std[size_t(d)], std::log(1.0 / precision), 1e-4) << "k " << k;
    }
    // A learned variance at v = +1 is beta itself.
    const std::vector<float> v(3, 1.0f);
    s.reverse_step(k, xt.data(), noise.data(), v.data(), 3, mean.data(), log_std.data());
    EXPECT_NEAR(2.0 * log_std[0], std::log(beta), 1e-5);
  }
}

TEST(DiffusionSchedule, TheLastStepReturnsThePredictedX0) {
  const DiffusionSchedule s(1000, 100);
  const std::vector<float> x0{0.5f, -0.25f}, noise{-1.0f, 0.3f};
  std::vector<float> xt(2), mean(2), log_std(2);
  s.add_noise(0, x0.data(), noise.data(), 2, xt.data());
  s.reverse_step(0, xt.data(), noise.data(), nullptr, 2, mean.data(), log_std.data());
  EXPECT_NEAR(mean[0], 0.5f, 1e-4);
  EXPECT_NEAR(mean[1], -0.25f, 1e-4);
  EXPECT_THROW(DiffusionSchedule(10, 20), adtree::Error);
}

// The bound clamps the prediction of x0 (x_t - sqrt(1 - abar) eps) / sqrt(abar) before the
// posterior mean is formed. At the first reverse step an epsilon error of 0.01 moves that
// prediction by 0.01 * sqrt(1 - abar) / sqrt(abar) (hundreds): the bound keeps the mean where the
// posterior of a bounded x0 can be. Without a bound the same step lands far outside.
TEST(DiffusionSchedule, TheBoundClampsThePredictionOfX0) {
  const DiffusionSchedule free(1000, 25), bounded(1000, 25, 2.0);
  const int k = 24;  // the first step to run: t = 999
  const std::vector<float> x0{0.5f, -1.5f}, noise{0.9f, -0.4f};
  std::vector<float> xt(2), eps(2), mean(2), log_std(2), mean_free(2);
  bounded.add_noise(k, x0.data(), noise.data(), 2, xt.data());
  eps = {noise[0] - 0.01f, noise[1] + 0.01f};  // a small head error
  bounded.reverse_step(k, xt.data(), eps.data(), nullptr, 2, mean.data(), log_std.data());
  free.reverse_step(k, xt.data(), eps.data(), nullptr, 2, mean_free.data(), log_std.data());
  const double ab = bounded.alpha_bar(k), ab_prev = bounded.alpha_bar(k - 1), b = bounded.beta(k);
  for (int d = 0; d < 2; ++d) {
    const double pred = (xt[size_t(d)] - std::sqrt(1.0 - ab) * eps[size_t(d)]) / std::sqrt(ab);
    ASSERT_GT(std::abs(pred), 50.0) << "the error should be amplified here";
    const double clamped = std::max(-2.0, std::min(2.0, pred));
    const double m =
        (b * std::sqrt(ab_prev) * clamped + (1.0 - ab_prev) * std::sqrt(1.0 - b) * xt[size_t(d)]) /
        (1.0 - ab);
    EXPECT_NEAR(mean[size_t(d)], m, 1e-4) << d;
    EXPECT_LT(std::abs(mean[size_t(d)]), 2.0 * std::sqrt(ab_prev) + std::abs(xt[size_t(d)]));
    EXPECT_GT(std::abs(mean_free[size_t(d)]), 5.0) << "unbounded, the mean runs away";
  }
  EXPECT_EQ(bounded.x0_bound(), 2.0);
  EXPECT_THROW(DiffusionSchedule(1000, 25, -1.0), adtree::Error);
  EXPECT_THROW(DiffusionSchedule(1000, 25, std::nan("")), adtree::Error);
}
