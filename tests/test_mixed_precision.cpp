// bf16 autocast for training steps (train/mixed_precision.h): products in bf16 inside the guard
// and fp32 after it, the state of an enclosing guard restored, the cast copies of weights dropped
// on leaving (else the next step would multiply by the weights from before the update), gradients
// reaching fp32 weights in fp32, and the --matmul choices.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <string>

#include "model/llamagen/vq.h"
#include "model/params.h"
#include "train/mixed_precision.h"
#include "util/error.h"

namespace tr = adtree::train;

namespace {

at::Tensor leaf(at::IntArrayRef sizes, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  auto t = at::randn(sizes, gen, at::TensorOptions().dtype(at::kFloat));
  t.set_requires_grad(true);
  return t;
}

}  // namespace

TEST(AutocastBf16, ProductsRunInBf16InsideAndFp32After) {
  const auto a = at::randn({8, 16}), b = at::randn({16, 4});
  EXPECT_EQ(at::matmul(a, b).scalar_type(), at::kFloat);
  {
    tr::AutocastBf16 outer(at::kCPU, true);
    EXPECT_EQ(at::matmul(a, b).scalar_type(), at::kBFloat16);
    {
      tr::AutocastBf16 inner(at::kCPU, true);
      EXPECT_EQ(at::matmul(a, b).scalar_type(), at::kBFloat16);
    }
    // Leaving the inner guard keeps the outer one's state.
    EXPECT_EQ(at::matmul(a, b).scalar_type(), at::kBFloat16);
    // Elementwise work is not cast: the residual stream stays fp32.
    EXPECT_EQ((a + a).scalar_type(), at::kFloat);
  }
  EXPECT_EQ(at::matmul(a, b).scalar_type(), at::kFloat);
  {
    tr::AutocastBf16 off(at::kCPU, false);
    EXPECT_EQ(at::matmul(a, b).scalar_type(), at::kFloat);
  }
}

TEST(AutocastBf16, ProductsAreCloseAndGradientsReachFp32Weights) {
  auto w = leaf({32, 64}, 1);
  const auto x = at::randn({16, 64});
  const auto want = at::linear(x.to(at::kDouble), w.detach().to(at::kDouble));
  at::Tensor y;
  {
    tr::AutocastBf16 guard(at::kCPU, true);
    y = at::linear(x, w);
    ASSERT_EQ(y.scalar_type(), at::kBFloat16);
    y.to(at::kFloat).square().sum().backward();
  }
  // bf16 inputs (8-bit mantissa) with fp32 sums: a few parts in a thousand of the row scale.
  const double scale = want.abs().max().item<double>();
  EXPECT_LT((y.to(at::kDouble) - want).abs().max().item<double>(), 2e-2 * scale);
  ASSERT_TRUE(w.grad().defined());
  EXPECT_EQ(w.grad().scalar_type(), at::kFloat);
  const auto want_grad = at::matmul((2 * want).t(), x.to(at::kDouble));
  EXPECT_LT((w.grad().to(at::kDouble) - want_grad).abs().max().item<double>(),
            2e-2 * want_grad.abs().max().item<double>());
}

TEST(AutocastBf16, LeavingDropsTheCastCopiesOfUpdatedWeights) {
  auto w = leaf({8, 8}, 2);
  const auto x = at::eye(8);
  at::Tensor before;
  {
    tr::AutocastBf16 guard(at::kCPU, true);
    before = at::linear(x, w).to(at::kFloat);
  }
  {
    at::NoGradGuard no_grad;
    w.add_(10.0);  // what the optimiser's in-place update does
  }
  tr::AutocastBf16 guard(at::kCPU, true);
  const auto after = at::linear(x, w).to(at::kFloat);
  // A stale cast copy would give `before` again.
  EXPECT_NEAR((after - before).mean().item<double>(), 10.0, 0.1);
}

TEST(AutocastBf16, VqForwardAndBackwardRun) {
  // The VQ mixes convolutions (cast to bf16) with group norms whose weights stay fp32.
  adtree::model::VqConfig cfg;
  cfg.codebook_size = 16;
  cfg.codebook_dim = 4;
  cfg.ch = 8;
  cfg.ch_mult = {1, 2};
  cfg.z_channels = 8;
  cfg.num_res_blocks = 1;
  cfg.norm_groups = 4;
  auto weights = adtree::model::init_params(adtree::model::vq_param_specs(cfg, true), 3);
  for (auto& [name, t] : weights) t.set_requires_grad(true);
  const adtree::model::VqModel vq(cfg, weights);
  const auto images = at::rand({2, 3, 8, 8}) * 2 - 1;
  tr::AutocastBf16 guard(at::kCPU, true);
  const auto recon = vq.decode_latents(vq.encode(images));
  const auto loss = (recon.to(at::kFloat) - images).abs().mean();
  loss.backward();
  EXPECT_TRUE(std::isfinite(loss.item<double>()));
  EXPECT_TRUE(weights.at("decoder.conv_out.weight").grad().defined());
}

TEST(MatmulChoice, KnownChoicesAndWhatACpuComputes) {
  for (const char* ok : {"fp32", "tf32", "bf16"}) EXPECT_NO_THROW(tr::check_matmul_choice(ok));
  try {
    tr::check_matmul_choice("fp16");
    ADD_FAILURE() << "fp16 accepted";
  } catch (const adtree::Error& e) {
    EXPECT_NE(std::string(e.what()).find("--matmul must be fp32, tf32 or bf16"), std::string::npos);
  }
  EXPECT_EQ(tr::effective_matmul("tf32", at::kCPU), "fp32");
  EXPECT_EQ(tr::effective_matmul("bf16", at::kCPU), "bf16");
  EXPECT_EQ(tr::effective_matmul("fp32", at::kCPU), "fp32");
  EXPECT_EQ(tr::effective_matmul("tf32", at::Device(at::kCUDA, 0)), "tf32");
}
