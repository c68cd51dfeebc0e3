// The diffusion head's lean sampling loop (core/model/continuous/lean_head.h) against the libtorch
// reference (head_sampler.h, itself checked against the formulas in test_diffusion_head.cpp): the
// same token, the same last Gaussian and the same sum of log stds, with and without CFG, for one
// row and for a batch, at two temperatures.
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include "model/continuous/diffusion_head.h"
#include "model/continuous/head_sampler.h"
#include "model/continuous/lean_head.h"
#include "model/params.h"
#include "util/error.h"

using namespace adtree::model;

TEST(LeanHead, DrawsTheReferenceTrajectory) {
  DiffusionHeadConfig c;
  c.token_dim = 4, c.cond_dim = 24, c.width = 40, c.blocks = 2, c.freq_dim = 32;
  auto w = init_params(diffusion_head_param_specs(c), 4);
  auto gen = at::detail::createCPUGenerator(9);
  for (auto& [k, t] : w) t.normal_(0.0, 0.15, gen);
  const DiffusionHead head(c, w);
  const DiffusionSchedule s(200, 9);
  const LeanHead lean(head, s);
  for (int64_t B : {1, 5}) {
    for (double cfg : {1.0, 3.0}) {
      for (double temp : {1.0, 0.7}) {
        const auto z = at::randn({B, 24}, gen), zu = at::randn({B, 24}, gen);
        const auto xT = at::randn({B, 4}, gen), noise = at::randn({B, 9, 4}, gen);
        const auto zu_or = cfg != 1.0 ? zu : at::Tensor();
        const auto want = sample_head(head, s, z, zu_or, cfg, temp, xT, noise);
        const auto got = lean.sample(z, zu_or, cfg, temp, xT, noise);
        const auto tag = "B " + std::to_string(B) + " cfg " + std::to_string(cfg);
        EXPECT_TRUE(at::allclose(got.x0, want.x0, 1e-4, 1e-4)) << tag;
        EXPECT_TRUE(at::allclose(got.last_mean, want.last_mean, 1e-4, 1e-4)) << tag;
        EXPECT_TRUE(at::allclose(got.last_log_std, want.last_log_std, 1e-4, 1e-4)) << tag;
        EXPECT_TRUE(at::allclose(got.log_std_before_last, want.log_std_before_last, 1e-5, 1e-4))
            << tag;
      }
    }
  }
  EXPECT_THROW(
      lean.sample(at::randn({1, 24}), {}, 1.0, 1.0, at::randn({1, 4}), at::randn({1, 8, 4})),
      adtree::Error);
}
