// The fast picture decoder (model/llamagen/vq_decoder.h) against the reference VqModel, and its
// fused GroupNorm+SiLU kernel (model/llamagen/group_norm_nhwc.h) against libtorch's group_norm and
// silu.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <memory>
#include <string>

#include "model/llamagen/group_norm_nhwc.h"
#include "model/llamagen/vq_decoder.h"
#include "model/params.h"
#include "small_vq.h"
#include "util/error.h"

namespace {

using adtree::model::group_norm_nhwc;
using adtree::model::VqConfig;
using adtree::model::VqDecoder;
using adtree::model::VqModel;
using adtree::model::VqPrecision;

at::Tensor channels_last(const at::Tensor& x) {
  return x.contiguous(at::MemoryFormat::ChannelsLast);
}

// libtorch's own ops on a contiguous fp32 copy: the definition the kernel must meet.
at::Tensor reference_norm(const at::Tensor& x, int64_t groups, const at::Tensor& w,
                          const at::Tensor& b, bool silu) {
  at::Tensor y = at::group_norm(x.to(at::kFloat).contiguous(), groups, w, b, 1e-6);
  return silu ? at::silu(y) : y;
}

// Every compiled variant: portable, AVX2 and AVX-512 (a variant the CPU cannot run falls back to
// the widest it has).
TEST(GroupNormNhwc, MatchesLibtorchInFp32) {
  at::manual_seed(0);
  for (int kernel : {0, 1, 2}) {
    adtree::model::force_group_norm_kernel(kernel);
    // Channel counts below, at and past one vector of 16, odd planes, two images, offset inputs.
    for (auto [n, c, groups, h, w] :
         {std::array<int64_t, 5>{2, 24, 8, 5, 7}, std::array<int64_t, 5>{1, 128, 32, 16, 16},
          std::array<int64_t, 5>{1, 40, 4, 33, 3}}) {
      const at::Tensor x = at::randn({n, c, h, w}) * 3.0 + 1.5;
      const at::Tensor wt = at::randn({c}), bs = at::randn({c});
      for (bool silu : {false, true}) {
        const at::Tensor y = group_norm_nhwc(channels_last(x), groups, wt, bs, 1e-6, silu);
        EXPECT_TRUE(y.is_contiguous(at::MemoryFormat::ChannelsLast));
        const at::Tensor ref = reference_norm(x, groups, wt, bs, silu);
        EXPECT_LT((y - ref).abs().max().item<float>(), 2e-5f)
            << "kernel " << kernel << ", " << c << " channels, silu " << silu;
      }
    }
  }
  adtree::model::force_group_norm_kernel(-1);
}

// bf16 in and out: the kernel computes in fp32 from the bf16 input and rounds once at the end.
TEST(GroupNormNhwc, Bf16IsTheFp32ResultRoundedOnce) {
  at::manual_seed(1);
  const at::Tensor x = at::randn({1, 64, 12, 9}).to(at::kBFloat16);
  const at::Tensor wt = at::randn({64}), bs = at::randn({64});
  const at::Tensor ref = reference_norm(x, 16, wt, bs, true);
  // One bf16 rounding: half a unit in the 8th bit of the value, plus the fp32 kernel's own error.
  const at::Tensor bound = ref.abs() * (1.0 / 256) + 1e-5;
  for (int kernel : {0, 1, 2}) {
    adtree::model::force_group_norm_kernel(kernel);
    const at::Tensor y = group_norm_nhwc(channels_last(x), 16, wt, bs, 1e-6, true);
    ASSERT_EQ(y.scalar_type(), at::kBFloat16);
    EXPECT_TRUE(((y.to(at::kFloat) - ref).abs() <= bound).all().item<bool>()) << kernel;
  }
  adtree::model::force_group_norm_kernel(-1);
}

TEST(GroupNormNhwc, RejectsWhatItCannotRead) {
  const at::Tensor w = at::ones({8}), b = at::zeros({8});
  EXPECT_THROW(group_norm_nhwc(at::randn({1, 8, 4, 4}), 4, w, b, 1e-6, true), adtree::Error);
  EXPECT_THROW(
      group_norm_nhwc(channels_last(at::randn({1, 8, 4, 4}).to(at::kDouble)), 4, w, b, 1e-6, true),
      adtree::Error);
  EXPECT_THROW(group_norm_nhwc(channels_last(at::randn({1, 8, 4, 4})), 3, w, b, 1e-6, true),
               adtree::Error);
}

VqConfig decoder_test_config() {
  return adtree::testing::small_vq_config();
}

std::shared_ptr<const VqModel> small_vq(uint64_t seed) {
  const VqConfig cfg = decoder_test_config();
  return std::make_shared<const VqModel>(
      cfg, adtree::model::init_params(adtree::model::vq_param_specs(cfg, false), seed));
}

TEST(VqDecoder, Fp32DecodesWhatTheReferenceDecodes) {
  const auto vq = small_vq(3);
  const VqDecoder dec(vq, VqPrecision::Fp32);
  EXPECT_EQ(dec.dtype(), at::kFloat);
  const at::Tensor idx = at::randint(0, 64, {2, 20}, at::kLong);
  // The whole 4 x 5 grid, and a raster prefix (the rest from zero latents, as previews decode).
  for (int64_t n : {int64_t(20), int64_t(7)}) {
    const at::Tensor part = idx.narrow(1, 0, n);
    const at::Tensor ref = vq->decode(part, 4, 5), got = dec.decode(part, 4, 5);
    ASSERT_EQ(got.sizes(), ref.sizes());
    EXPECT_LT((got - ref).abs().max().item<float>(), 1e-4f) << n << " cells";
  }
}

// The bf16 decoder's distance from the reference, in the bytes of the picture (what a user sees):
// stated bounds on random weights of the small shape (docs/PERFORMANCE.md states it for VQ-16).
TEST(VqDecoder, Bf16StaysWithinItsStatedDistanceInBytes) {
  const auto vq = small_vq(4);
  const VqDecoder dec(vq, VqPrecision::Bf16);
  EXPECT_EQ(dec.dtype(), at::kBFloat16);
  const at::Tensor idx = at::randint(0, 64, {1, 20}, at::kLong);
  const at::Tensor ref = VqModel::to_bytes(vq->decode(idx, 4, 5)).to(at::kInt);
  const at::Tensor got = VqModel::to_bytes(dec.decode(idx, 4, 5)).to(at::kInt);
  const at::Tensor diff = (got - ref).abs();
  EXPECT_LE(diff.max().item<int>(), 8);
  EXPECT_LE(diff.to(at::kFloat).mean().item<float>(), 1.5f);
}

TEST(VqDecoder, BadIndicesGetTheReferenceErrors) {
  const VqDecoder dec(small_vq(5), VqPrecision::Fp32);
  try {
    dec.decode(at::full({1, 4}, 64, at::kLong), 2, 2);
    FAIL() << "an index past the codebook was decoded";
  } catch (const adtree::Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
  }
  EXPECT_THROW(dec.decode(at::zeros({1, 5}, at::kLong), 2, 2), adtree::Error);
}

TEST(VqDecoder, PrecisionNames) {
  EXPECT_EQ(adtree::model::vq_precision_from_string("bf16"), VqPrecision::Bf16);
  EXPECT_EQ(adtree::model::to_string(VqPrecision::Fp32), "fp32");
  EXPECT_THROW(adtree::model::vq_precision_from_string("fp8"), adtree::Error);
  // Auto picks bf16 exactly where the CPU has the bf16 dot product.
  const VqDecoder dec(small_vq(6), VqPrecision::Auto);
  EXPECT_EQ(dec.dtype(), adtree::model::cpu_has_bf16_products() ? at::kBFloat16 : at::kFloat);
}

}  // namespace
