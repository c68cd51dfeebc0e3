// The lean CPU path (model/llamagen/lean_layer.h) against the libtorch reference path: logits and
// features within 1e-5 relative for every kind of block the engine runs (prefill with caption
// padding, one token, a tree block with scratch rows, no cache, blocks of 10 and 12 queries that
// take the packed attention), for the target and the draft head, on a head width the AVX2 attention
// takes (64) and one it leaves to the portable loops (32); and the same tokens from whole greedy
// and sampled generations.
#include <gtest/gtest.h>

#include "decode/settings/method_table.h"
#include "lean_blocks.h"
#include "model/cpu/forward_profile.h"
#include "model/cpu/lean_attention.h"
#include "model/cpu/lean_kernels.h"
#include "model/cpu/packed_gemm.h"
#include "model/llamagen/lean_layer.h"
#include "spec_fixture.h"

using namespace adtree;
using namespace adtree::model;
using adtree::testing::LeanSwitch;
using adtree::testing::run_blocks;
using adtree::testing::SpecFixture;
using adtree::testing::wide_heads;

namespace {

double rel_err(const at::Tensor& got, const at::Tensor& want) {
  const double scale = want.abs().max().item<double>();
  return (got - want).abs().max().item<double>() / std::max(scale, 1e-12);
}

}  // namespace

TEST(LeanLayer, MatchesTheReferencePathOnEveryBlockKind) {
  LeanSwitch restore;
  const int best = int(packed_kernel());
  for (int kernel = 0; kernel <= best; ++kernel) {  // each variant this CPU runs
    force_packed_kernel(kernel);
    for (const auto& cfg : {GptConfig::preset("micro"), wide_heads()}) {
      SpecFixture f(cfg, 3, 0.5);
      at::manual_seed(11);
      set_lean_enabled(false);
      const auto want = run_blocks(f);
      at::manual_seed(11);
      set_lean_enabled(true);
      const auto got = run_blocks(f);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(got[i].sizes(), want[i].sizes()) << "output " << i;
        EXPECT_LT(rel_err(got[i], want[i]), 1e-5)
            << "output " << i << " head_dim " << cfg.head_dim() << " kernel " << kernel;
      }
    }
  }
  force_packed_kernel(-1);
}

TEST(LeanLayer, RmsNormMatchesTheFormula) {
  auto x = at::randn({3, 40});
  auto w = at::randn({40});
  auto y = at::empty_like(x);
  lean_rms_norm(x.data_ptr<float>(), w.data_ptr<float>(), 3, 40, 1e-5, y.data_ptr<float>());
  auto want = x.to(at::kDouble) * at::rsqrt(x.to(at::kDouble).pow(2).mean(-1, true) + 1e-5) *
              w.to(at::kDouble);
  EXPECT_LT(rel_err(y.to(at::kDouble), want), 1e-6);
}

TEST(LeanLayer, WholeGenerationsCommitTheSameTokens) {
  LeanSwitch restore;
  SpecFixture f(wide_heads(), 5, 0.5);
  auto c = f.cond({2, 7}, true);
  for (const char* method : {"ar", "adt", "static", "sjd"}) {
    for (double temperature : {0.0, 1.0}) {
      decode::DecodeRequest r;
      r.method.method = decode::method_from_string(method);
      r.sampling.temperature = temperature;
      r.seed = 9;
      auto run = [&](bool lean) {
        set_lean_enabled(lean);
        decode::SpecOptions o;
        if (r.method.method == decode::Method::Ar)
          return decode::generate_ar(*f.target, c, r.sampling, r.seed);
        if (decode::is_jacobi(r.method.method)) return decode::generate_jacobi(*f.target, c, r, o);
        auto src = decode::make_eagle_source(*f.head, *f.target, 2);
        return decode::generate_speculative(*f.target, *src, c, r, o);
      };
      const auto ref = run(false), lean = run(true);
      EXPECT_EQ(lean.tokens, ref.tokens) << method << " T " << temperature;
    }
  }
}

TEST(LeanLayer, TheSwitchTurnsThePathOff) {
  LeanSwitch restore;
  SpecFixture f(wide_heads());
  auto x = at::randn({2, 1, 128});
  set_lean_enabled(false);
  EXPECT_FALSE(
      lean_applies(make_layer(f.target->weights(), "layers.0.", 128, 64, true), x, nullptr));
  set_lean_enabled(true);
  EXPECT_TRUE(
      lean_applies(make_layer(f.target->weights(), "layers.0.", 128, 64, true), x, nullptr));
  // The trainer's layers (no fused w13, no prescaled q) always take the reference path.
  EXPECT_FALSE(
      lean_applies(make_layer(f.target->weights(), "layers.0.", 128, 64, false), x, nullptr));
  EXPECT_FALSE(lean_applies(make_layer(f.target->weights(), "layers.0.", 128, 64, true),
                            x.to(at::kDouble), nullptr));
}

// The gate's exp (a polynomial in the AVX2 build) across the whole float range a logit can take:
// relative error of silu(g1) * g3 within 5e-6 of double math (float: a few ulp), and exactly 0
// where expf underflows.
TEST(LeanLayer, SwigluMatchesTheFormulaAcrossTheRange) {
  const int64_t hid = 37;  // four 8-lane blocks and a tail
  auto g1 = at::linspace(-100.0, 80.0, 3 * hid).view({3, hid});
  auto g3 = at::randn({3, hid});
  auto g = at::cat({g1, g3}, 1).contiguous();
  auto act = at::empty({3, hid});
  lean_swiglu(g.data_ptr<float>(), 3, hid, act.data_ptr<float>());
  auto d1 = g1.to(at::kDouble);
  auto want = d1 / (1 + at::exp(-d1)) * g3.to(at::kDouble);
  auto err = (act.to(at::kDouble) - want).abs() / (want.abs() + 1e-30);
  EXPECT_LT(err.max().item<double>(), 5e-6);
  auto x = at::tensor(std::vector<float>{-200.0f, -90.0f, 88.0f, 0.0f});
  auto gg = at::cat({x, at::ones({4})}).view({1, 8}).contiguous();
  auto a = at::empty({1, 4});
  lean_swiglu(gg.data_ptr<float>(), 1, 4, a.data_ptr<float>());
  EXPECT_EQ(a[0][3].item<float>(), 0.0f);
  EXPECT_NEAR(a[0][2].item<float>(), 88.0f, 1e-4);
}

// The bench's block table (model/cpu/forward_profile.h): with profiling on, a lean forward's time
// lands in its parts (every part a decoder step runs, each at most the whole forward's time);
// off, nothing is counted and the logits are the same.
TEST(ForwardProfile, CountsEachPartOnlyWhenOn) {
  LeanSwitch restore;
  set_lean_enabled(true);
  SpecFixture f(wide_heads(), 5, 0.5);
  const auto c = f.cond({2, 7}, true);
  const auto toks = at::randint(f.target->config().vocab_size, {2, 6}, at::kLong);
  auto forward = [&] {
    auto cache = f.target->new_cache(2);
    f.target->prefill(cache, c);
    return f.target->forward_tokens(cache, toks, 0).logits;
  };
  take_forward_profile();
  const auto off = forward();
  const auto none = take_forward_profile();
  EXPECT_EQ(none.total(), 0.0);
  set_forward_profiling(true);
  const auto t0 = Clock::now();
  const auto on = forward();
  const double wall = ms_since(t0);
  set_forward_profiling(false);
  const auto p = take_forward_profile();
  EXPECT_TRUE(at::equal(on, off));
  for (auto part : {ForwardPart::Norms, ForwardPart::Qkv, ForwardPart::RopeCache,
                    ForwardPart::Attention, ForwardPart::Wo, ForwardPart::W13, ForwardPart::Swiglu,
                    ForwardPart::W2, ForwardPart::Residual, ForwardPart::Head}) {
    EXPECT_GT(p.ms[int(part)], 0.0) << to_string(part);
  }
  EXPECT_LE(p.total(), wall);
  EXPECT_EQ(take_forward_profile().total(), 0.0) << "a take starts the sums afresh";
}

// The attention's AVX-512 loops (three queries at a time, the weighted sums on 16 lanes) give the
// AVX2 loops' bits, with keys each query does or does not see (a tree's mask: hidden keys in the
// middle of the row) and key counts that end inside an eight-key group.
TEST(LeanAttention, Avx512LoopsGiveTheAvx2Bits) {
  if (packed_kernel() < CpuKernel::Avx512) GTEST_SKIP() << "no AVX-512 on this CPU";
  at::manual_seed(3);
  const int64_t hd = 64;
  for (int64_t n_query : {1, 2, 3, 5, 8}) {
    for (int64_t n_keys : {9, 37, 150}) {
      const auto q = at::randn({n_query, hd}), K = at::randn({n_keys, hd}),
                 V = at::randn({n_keys, hd});
      auto bias = at::zeros({n_query, n_keys});
      for (int64_t i = 0; i < n_query; ++i) {
        for (int64_t j = n_keys / 2; j < n_keys; ++j) {
          if ((i + j) % 3 == 0) bias[i][j] = -INFINITY;  // hidden from some queries only
        }
      }
      auto run = [&](CpuKernel kernel) {
        force_packed_kernel(int(kernel));
        auto out = at::zeros({n_query, hd});
        std::vector<float> scores(static_cast<size_t>(n_keys), 0.0f);
        lean_attend({q.data_ptr<float>(), K.data_ptr<float>(), V.data_ptr<float>(),
                     bias.data_ptr<float>(), n_query, n_keys, hd, hd, hd, n_keys, 1, scores.data(),
                     out.data_ptr<float>()});
        return out;
      };
      const auto wide = run(CpuKernel::Avx512), narrow = run(CpuKernel::Avx2);
      EXPECT_TRUE(at::equal(wide, narrow)) << n_query << " queries, " << n_keys << " keys";
    }
  }
  force_packed_kernel(-1);
}
