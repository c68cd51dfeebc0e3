// The lean CPU path of a bf16 model (model/cpu/packed_bf16.h): the bf16 panel kernel in each
// variant this CPU runs against double-precision math on the bf16-rounded operands, with every
// output row independent of the rows it is computed with (bit for bit); the bf16 lean layer against
// the libtorch bf16 reference and against fp32 math on the same rounded weights; and greedy and
// coupled sampled generations token-identical between AR and speculative decoding at bf16.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "decode/ar_sampler.h"
#include "decode/settings/method_table.h"
#include "lean_blocks.h"
#include "model/cpu/pack_rows.h"
#include "model/cpu/packed_bf16.h"
#include "model/llamagen/lean_layer.h"
#include "spec_fixture.h"

using namespace adtree;
using namespace adtree::model;
using adtree::testing::LeanSwitch;
using adtree::testing::run_blocks;
using adtree::testing::scaled_params;
using adtree::testing::SpecFixture;
using adtree::testing::wide_heads;

namespace {

// Each kernel variant this CPU runs, restoring the choice afterwards.
template <typename F>
void for_each_kernel(F f) {
  const int best = int(packed_kernel());
  for (int kernel = 0; kernel <= best; ++kernel) {
    force_packed_kernel(kernel);
    f(kernel);
  }
  force_packed_kernel(-1);
}

at::Tensor rounded(const at::Tensor& t) {
  return t.to(at::kBFloat16).to(at::kDouble);
}

// The fixture's target and head with their weights in `dtype` (fp32 weights rounded to bf16 first
// when `round`), from the fixture's seeds.
SpecFixture fixture(const GptConfig& cfg, at::ScalarType dtype, bool round = false) {
  SpecFixture f(cfg, 3, 0.3);
  auto tw = scaled_params(gpt_param_specs(cfg), 3, 0.3);
  auto hw = scaled_params(drafter_param_specs(cfg), 103, 0.3);
  if (round) {
    for (auto* m : {&tw, &hw}) {
      for (auto& [k, t] : *m) t = t.to(at::kBFloat16).to(at::kFloat);
    }
  }
  f.head.reset();
  f.target = std::make_unique<Gpt>(cfg, tw, at::kCPU, dtype);
  f.head = std::make_unique<Drafter>(*f.target, hw);
  return f;
}

// |got - want| / |want| in the Frobenius norm.
double bf16_rel_err(const at::Tensor& got, const at::Tensor& want) {
  const auto w = want.to(at::kDouble);
  return (got.to(at::kDouble) - w).norm().item<double>() / std::max(w.norm().item<double>(), 1e-12);
}
}  // namespace

// Each output against the exact sum of the bf16-rounded products: within the fp32 accumulation
// bound (n + 2) u sum |x w| (u = 2^-24; in terms, a bias add), for output counts that end inside
// a panel or leave an odd panel, odd input widths (a padded pair) and ones spanning k-blocks,
// row counts around the tiles (4 and 12 rows) and groups (48). Packing from bf16 weights gives
// the same panels as from fp32 ones.
TEST(PackedBf16, EveryVariantMatchesDoubleMathOnRoundedInputs) {
  at::manual_seed(4);
  for (int64_t out : {5, 16, 37, 64, 300}) {
    for (int64_t in : {13, 64, 301, 600}) {
      const auto w = at::randn({out, in}), b = at::randn({out});
      const auto pw = pack_weight_bf16(w);
      ASSERT_TRUE(pw.bf16());
      ASSERT_TRUE(at::equal(pw.panels, pack_weight_bf16(w.to(at::kBFloat16)).panels));
      for (int64_t rows : {1, 2, 3, 4, 5, 11, 12, 13, 25, 48, 49, 70}) {
        const auto x = at::randn({rows, in});
        const auto wd = rounded(w), xd = rounded(x), bd = b.to(at::kDouble);
        const auto want = at::linear(xd, wd, bd);
        const auto bound =
            (at::linear(xd.abs(), wd.abs(), bd.abs()) * double(in + 2) * std::ldexp(1.0, -24));
        for_each_kernel([&](int kernel) {
          const auto got = packed_linear(x, pw, b).to(at::kDouble);
          EXPECT_TRUE(((got - want).abs() <= bound).all().item<bool>())
              << "out " << out << " in " << in << " rows " << rows << " kernel " << kernel
              << " worst " << ((got - want).abs() - bound).max().item<double>();
        });
      }
    }
  }
  EXPECT_FALSE(pack_weight_bf16(at::randn({4, 4}, at::kDouble)).defined());
}

// A product's input rows are rounded 16 at a time on AVX-512: the scalar rounding's bits for
// every kind of input (ties to even, carries into the exponent, infinities, NaNs kept quiet,
// denormals, zeros of both signs), in each kernel variant, odd lengths included.
TEST(PackedBf16, PairRoundingMatchesTheScalarRounding) {
  std::vector<float> x;
  for (uint32_t bits : {0x3f808000u, 0x3f818000u, 0x3f80ffffu, 0x7f7fffffu, 0x7f800000u,
                        0xff800000u, 0x7fc00001u, 0x7f800001u, 0xffa00000u, 0x00000001u,
                        0x807fffffu, 0x00000000u, 0x80000000u, 0x3effff80u}) {
    float f;
    std::memcpy(&f, &bits, sizeof(f));
    x.push_back(f);
  }
  at::manual_seed(6);
  const auto r = at::randn({70}) * 1e3;
  for (int64_t i = 0; i < 70; ++i) x.push_back(r[i].item<float>());
  for (int64_t n :
       {int64_t(x.size()), int64_t(x.size()) - 1, int64_t(17), int64_t(16), int64_t(3)}) {
    std::vector<uint32_t> want(size_t((n + 1) / 2));
    for (int64_t j = 0; j < (n + 1) / 2; ++j) {
      want[size_t(j)] = uint32_t(round_to_bf16(x[size_t(2 * j)])) |
                        (2 * j + 1 < n ? uint32_t(round_to_bf16(x[size_t(2 * j + 1)])) << 16 : 0u);
    }
    for_each_kernel([&](int kernel) {
      std::vector<uint32_t> got(want.size(), 0xdeadbeefu);
      round_to_bf16_pairs(x.data(), n, got.data());
      EXPECT_EQ(got, want) << "n " << n << " kernel " << kernel;
    });
  }
}

// The invariant that keeps speculative decoding token-identical to AR: a row's outputs do not
// depend on the other rows of the call (how many, or which tile the row falls in), bit for bit,
// in every variant; on a product large enough to be shared out by the worker pool too. The vector
// variants also agree with each other bit for bit: exact products summed in vdpbf16ps's documented
// order (it flushes denormals, which these inputs do not have). The AMX tiles sum in their own
// order (within the bound of EveryVariantMatchesDoubleMathOnRoundedInputs), so a bf16 picture made
// on an AMX CPU may differ from one made without; each stays token-identical to its own AR.
TEST(PackedBf16, RowsComputedAloneEqualRowsInABlock) {
  at::manual_seed(5);
  for (auto [out, in] : std::vector<std::pair<int64_t, int64_t>>{{37, 301}, {300, 600}}) {
    const auto w = at::randn({out, in});
    const auto pw = pack_weight_bf16(w);
    const auto x = at::randn({70, in});
    at::Tensor fallback;
    for_each_kernel([&](int kernel) {
      const auto block = packed_linear(x, pw);
      for (int64_t r = 0; r < 70; ++r) {
        const auto alone = packed_linear(x.narrow(0, r, 1).contiguous(), pw);
        ASSERT_TRUE(at::equal(alone[0], block[r])) << "row " << r << " kernel " << kernel;
      }
      for (int64_t first : {0, 5, 17}) {  // blocks of 13 rows starting anywhere in a tile
        const auto part = packed_linear(x.narrow(0, first, 13).contiguous(), pw);
        ASSERT_TRUE(at::equal(part, block.narrow(0, first, 13))) << "kernel " << kernel;
      }
      if (kernel == int(CpuKernel::Amx)) return;
      if (!fallback.defined()) fallback = block;
      EXPECT_TRUE(at::equal(block, fallback)) << "kernel " << kernel;
    });
  }
}

// Every block kind (lean_blocks.h) of a bf16 model's lean path against the libtorch bf16
// reference, which rounds every activation to bf16 where the lean path keeps fp32 and rounds only
// the matrix inputs: each output within 4% (relative Frobenius norm, about ten bf16 roundings) in
// each kernel variant. Both against fp32 math on the same bf16 weights: over all outputs, the
// lean path is the closer one.
TEST(LeanBf16, LayerMatchesTheLibtorchBf16Reference) {
  LeanSwitch restore;
  for (const auto& cfg : {GptConfig::preset("micro"), wide_heads()}) {
    auto f16 = fixture(cfg, at::kBFloat16);
    auto f32 = fixture(cfg, at::kFloat, /*round=*/true);
    set_lean_enabled(false);
    at::manual_seed(11);
    const auto ref = run_blocks(f16);
    at::manual_seed(11);
    const auto exact = run_blocks(f32);
    set_lean_enabled(true);
    for_each_kernel([&](int kernel) {
      at::manual_seed(11);
      const auto got = run_blocks(f16);
      ASSERT_EQ(got.size(), ref.size());
      double lean_err = 0, ref_err = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(got[i].sizes(), ref[i].sizes()) << "output " << i;
        ASSERT_EQ(got[i].scalar_type(), at::kFloat) << "output " << i;
        EXPECT_LT(bf16_rel_err(got[i], ref[i]), 0.04)
            << "output " << i << " head_dim " << cfg.head_dim() << " kernel " << kernel;
        lean_err += bf16_rel_err(got[i], exact[i]);
        ref_err += bf16_rel_err(ref[i], exact[i]);
      }
      EXPECT_LT(lean_err, ref_err) << "head_dim " << cfg.head_dim() << " kernel " << kernel;
    });
  }
}

// A bf16 model's lean path keeps fp32 caches and features, packs bf16 panels (half the fp32
// panels' bytes), and the reference paths still run on such a cache: the plain one and the
// fixed-shape one (a whole generation with fixed_shapes).
TEST(LeanBf16, Bf16ModelTakesTheLeanPathWithFp32Caches) {
  LeanSwitch restore;
  set_lean_enabled(true);
  auto f = fixture(wide_heads(), at::kBFloat16);
  auto f32 = fixture(wide_heads(), at::kFloat);
  EXPECT_TRUE(f.target->packed_output().bf16());
  EXPECT_EQ(f.target->packed_bytes() * 2, f32.target->packed_bytes());
  auto cache = f.target->new_cache(2);
  EXPECT_EQ(cache.k.front().scalar_type(), at::kFloat);
  EXPECT_EQ(f.head->new_cache(2).k.front().scalar_type(), at::kFloat);
  const auto cond = f.cond({1, 5}, true);
  EXPECT_EQ(f.target->prefill(cache, cond).hidden.scalar_type(), at::kFloat);
  // The head takes bf16 features too (widened exactly): the same outputs as from fp32 ones.
  const auto feats = at::randn({2, 3, 128}).to(at::kBFloat16);
  const auto toks = at::randint(64, {2, 3}, at::kLong);
  const auto pos = at::arange(20, 23, at::kLong);
  auto h1 = f.head->new_cache(2), h2 = f.head->new_cache(2);
  const auto a = f.head->forward(&h1, feats, toks, pos),
             b = f.head->forward(&h2, feats.to(at::kFloat), toks, pos);
  EXPECT_TRUE(at::equal(a.logits, b.logits));
  EXPECT_EQ(a.hidden.scalar_type(), at::kFloat);
  set_lean_enabled(false);  // the reference path on the fp32 cache the lean path began
  auto out = f.target->forward_tokens(cache, at::zeros({2, 3}, at::kLong), 0);
  EXPECT_EQ(out.hidden.scalar_type(), at::kBFloat16);
  EXPECT_TRUE(out.logits.isfinite().all().item<bool>());
  EXPECT_EQ(f.target->new_cache(2).k.front().scalar_type(), at::kBFloat16);
  set_lean_enabled(true);
  decode::SamplingParams sp;
  sp.cfg_scale = 2.0, sp.temperature = 0.0;
  const auto fixed = decode::generate_ar(*f.target, cond, sp, 0, {}, nullptr, {}, true);
  EXPECT_EQ(int64_t(fixed.tokens.size()), wide_heads().image_tokens());
}

// The invariant at the model's level: a block of n tokens gives, bit for bit, the logits of n
// single decoding steps, in every kernel variant (the matrix rows, and the attention's
// per-query loops for any query and key count).
// In fp32 as in bf16: blocks of up to 20 queries (a tree's verification) equal one-token steps.
TEST(LeanBf16, BlocksEqualSingleStepsBitForBit) {
  LeanSwitch restore;
  set_lean_enabled(true);
  for (auto dtype : {at::kBFloat16, at::kFloat}) {
    auto f = fixture(wide_heads(), dtype);
    const auto& g = *f.target;
    const auto c = f.cond({2, 7}, true);
    const auto toks = at::randint(g.config().vocab_size, {2, 20}, at::kLong);
    for_each_kernel([&](int kernel) {
      for (int64_t n : {2, 4, 10, 12, 20}) {
        auto block_cache = g.new_cache(2), step_cache = g.new_cache(2);
        g.prefill(block_cache, c);
        g.prefill(step_cache, c);
        const auto block = g.forward_tokens(block_cache, toks.narrow(1, 0, n), 0).logits;
        std::vector<at::Tensor> steps;
        for (int64_t i = 0; i < n; ++i) {
          steps.push_back(g.forward_tokens(step_cache, toks.narrow(1, i, 1), i).logits);
          step_cache.commit();
        }
        EXPECT_TRUE(at::equal(at::cat(steps, 1), block))
            << "n " << n << " kernel " << kernel << " " << dtype;
      }
    });
  }
}

// Speculative decoding on a bf16 model's lean path commits AR's tokens: greedy, and coupled
// sampling (Gumbel-max with shared noise, SPEC_DECODING.md 4) at temperature 1 with CFG, for the
// tree methods with the EAGLE head and the target as its own draft, and for a Jacobi method.
TEST(LeanBf16, SpeculativeEqualsArAtBf16) {
  LeanSwitch restore;
  set_lean_enabled(true);
  auto f = fixture(wide_heads(), at::kBFloat16);
  for (double temperature : {0.0, 1.0}) {
    for (uint64_t seed : {1, 2, 3}) {
      const auto c = f.cond({2, 7}, true);
      decode::DecodeRequest r;
      r.sampling.cfg_scale = 2.0;
      r.sampling.temperature = temperature;
      r.method.verify = decode::VerifyRule::Coupled;
      r.method.dynamic_tree.budget = 16;
      r.seed = seed;
      const auto ar = decode::generate_ar(*f.target, c, r.sampling, seed);
      for (const char* method : {"static", "dynamic", "adt", "sjd"}) {
        r.method.method = decode::method_from_string(method);
        decode::SpecOptions o;
        o.budget = r.method.dynamic_tree.budget;
        if (decode::is_jacobi(r.method.method)) {
          EXPECT_EQ(decode::generate_jacobi(*f.target, c, r, o).tokens, ar.tokens)
              << method << " T " << temperature << " seed " << seed;
          continue;
        }
        // The random head drafts badly, the target drafting for itself well (long accepted
        // paths, deep trees): both must give AR's tokens.
        for (bool oracle : {false, true}) {
          auto src = oracle ? decode::make_model_source(*f.target, 2)
                            : decode::make_eagle_source(*f.head, *f.target, 2);
          EXPECT_EQ(decode::generate_speculative(*f.target, *src, c, r, o).tokens, ar.tokens)
              << method << (oracle ? " (oracle)" : "") << " T " << temperature << " seed " << seed;
        }
      }
    }
  }
}
