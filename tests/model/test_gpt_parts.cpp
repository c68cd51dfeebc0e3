// Model parts against their direct formulas (LLAMAGEN.md): RMSNorm, SwiGLU, 2-D RoPE, sizing.
#include <gtest/gtest.h>

#include <c10/core/InferenceMode.h>

#include <cmath>

#include "model/cpu/pack_rows.h"
#include "model/cpu/packed_gemm.h"
#include "model/cpu/small_gemm.h"
#include "model/llamagen/drafter.h"
#include "model/llamagen/gpt.h"
#include "model/llamagen/rope2d.h"
#include "model/params.h"

using namespace adtree::model;

TEST(RmsNorm, MatchesDirectFormula) {
  auto x = at::randn({3, 16});
  auto g = at::randn({16});
  auto expect = x / at::sqrt((x * x).mean(-1, true) + 1e-5) * g;
  EXPECT_TRUE(at::allclose(rms_norm(x, g, 1e-5), expect, 1e-5, 1e-6));
}

TEST(RmsNorm, NormalisesInFp32ThenCastsThenScales) {
  // bf16 input: the result equals (normalise in fp32 -> cast to bf16) * weight, the reference
  // order.
  auto x = at::randn({2, 32}).to(at::kBFloat16);
  auto g = at::randn({32}).to(at::kBFloat16);
  auto xf = x.to(at::kFloat);
  auto expect = (xf * at::rsqrt(xf.pow(2).mean(-1, true) + 1e-5)).to(at::kBFloat16) * g;
  EXPECT_TRUE(at::equal(rms_norm(x, g, 1e-5), expect));
}

TEST(SwiGlu, MatchesDirectFormula) {
  auto x = at::randn({2, 5, 8});
  auto w1 = at::randn({12, 8}), w3 = at::randn({12, 8}), w2 = at::randn({8, 12});
  auto a = at::matmul(x, w1.t());
  auto expect = at::matmul(a / (1 + at::exp(-a)) * at::matmul(x, w3.t()), w2.t());
  EXPECT_TRUE(at::allclose(swiglu(x, w1, w2, w3), expect, 1e-4, 1e-5));
}

TEST(GptConfig, FfnHiddenRoundsUpToMultipleOf256) {
  GptConfig c;
  c.dim = 768;
  EXPECT_EQ(c.ffn_hidden(), 2048);  // int(8*768/3) = 2048
  c.dim = 256;
  EXPECT_EQ(c.ffn_hidden(), 768);  // 682 -> 768
  c.dim = 1280;
  EXPECT_EQ(c.ffn_hidden(), 3584);  // 3413 -> 3584
}

TEST(GptConfig, LlamaGenBHas111MParameters) {
  auto c = GptConfig::preset("B");
  int64_t n = 0;
  for (const auto& s : gpt_param_specs(c)) {
    int64_t k = 1;
    for (auto d : s.shape) k *= d;
    n += k;
  }
  EXPECT_NEAR(double(n) / 1e6, 111.0, 1.0);
}

TEST(Rope2d, HandComputedPairLayout) {
  // head_dim 8, grid 4, one condition token. Image token 6 sits at (row 1, col 2), position 7.
  // Pairs 0,1 rotate by the row with freqs 1 and 10000^(-1/2) = 0.01; pairs 2,3 by the column.
  Rope2d rope(8, 1, 4, 10000.0);
  auto x = at::tensor({1.f, 0.f, 1.f, 0.f, 1.f, 0.f, 1.f, 0.f}).view({1, 1, 1, 8});
  auto y = rope.apply(x, at::tensor({int64_t(7)})).view({8});
  const float expect[8] = {std::cos(1.f), std::sin(1.f), std::cos(.01f), std::sin(.01f),
                           std::cos(2.f), std::sin(2.f), std::cos(.02f), std::sin(.02f)};
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(y[i].item<float>(), expect[i], 1e-6) << "element " << i;
}

TEST(Rope2d, AdjacentPairsNotRotateHalf) {
  // A vector (a, b, 0, ...) rotates inside its first pair only: rotate-half would mix a with x[2].
  Rope2d rope(4, 1, 2, 10000.0);
  auto x = at::tensor({0.f, 1.f, 0.f, 0.f}).view({1, 1, 1, 4});
  auto y = rope.apply(x, at::tensor({int64_t(3)})).view({4});  // token 2 = (1, 0): row angle 1
  EXPECT_NEAR(y[0].item<float>(), -std::sin(1.f), 1e-6);
  EXPECT_NEAR(y[1].item<float>(), std::cos(1.f), 1e-6);
  EXPECT_EQ(y[2].item<float>(), 0.f);
  EXPECT_EQ(y[3].item<float>(), 0.f);
}

TEST(Rope2d, PreservesNorm) {
  Rope2d rope(16, 3, 8, 10000.0);
  auto x = at::randn({2, 10, 4, 16});
  auto pos = at::arange(3, 13, at::kLong);
  auto y = rope.apply(x, pos);
  EXPECT_TRUE(at::allclose(y.norm(2, -1), x.norm(2, -1), 1e-4, 1e-5));
}

TEST(Rope2d, DotProductDependsOnlyOnGridOffset) {
  // q.k for cells (r1, c1), (r2, c2) equals q.k for the same vectors shifted by the same (dr, dc).
  const int64_t C = 2, grid = 8;
  Rope2d rope(16, C, grid, 10000.0);
  auto q = at::randn({1, 1, 1, 16}), k = at::randn({1, 1, 1, 16});
  auto dot = [&](int64_t r1, int64_t c1, int64_t r2, int64_t c2) {
    auto pq = at::tensor({C + r1 * grid + c1}), pk = at::tensor({C + r2 * grid + c2});
    return (rope.apply(q, pq) * rope.apply(k, pk)).sum().item<float>();
  };
  EXPECT_NEAR(dot(1, 2, 3, 5), dot(4, 0, 6, 3), 1e-4);
  EXPECT_NEAR(dot(0, 7, 2, 1), dot(5, 6, 7, 0), 1e-4);
  EXPECT_GT(std::abs(dot(1, 2, 3, 5) - dot(1, 2, 3, 6)), 1e-4);  // and it does depend on offset
}

TEST(Rope2d, ConditionPositionsGiveZeroVectors) {
  Rope2d rope(8, 4, 4, 10000.0);
  auto x = at::randn({1, 4, 2, 8});
  auto y = rope.apply(x, at::arange(0, 4, at::kLong));
  EXPECT_EQ(y.abs().max().item<float>(), 0.f);
}

TEST(Rope2d, RejectsPositionsBeyondTheSequence) {
  Rope2d rope(8, 1, 2, 10000.0);
  EXPECT_THROW(rope.apply(at::randn({1, 1, 1, 8}), at::tensor({int64_t(5)})), std::exception);
}

// The small-row kernel against BLAS (an independent implementation of the same product): every
// row count it takes (1..16, the AVX2 / SSE2 blocks and their remainders), input widths that are
// and are not multiples of 8, with and without a bias; past 16 rows BLAS itself answers.
TEST(InferenceLinear, SmallRowKernelMatchesBlas) {
  using adtree::model::inference_linear;
  at::manual_seed(3);
  // Odd widths (tails of the vector loops), a width whose weight block is the smallest (1280),
  // output counts below and above one thread's share, and row counts around the register groups
  // and the kernel's 64-row limit (65 and 80 go to BLAS).
  for (int64_t out : {37, 300}) {
    for (int64_t in : {192, 13, 64, 1280}) {
      const auto w = at::randn({out, in});
      const auto b = at::randn({out});
      for (int64_t rows : {1, 2, 3, 7, 8, 9, 15, 16, 17, 40, 63, 64, 65, 80}) {
        const auto x = at::randn({rows, in});
        const auto want = at::linear(x.to(at::kDouble), w.to(at::kDouble), b.to(at::kDouble));
        const auto got = inference_linear(x, w, b).to(at::kDouble);
        const double err = (got - want).abs().max().item<double>();
        const double scale = want.abs().max().item<double>();
        EXPECT_LT(err, 1e-5 * scale) << "out " << out << " in " << in << " rows " << rows;
        const auto nb = inference_linear(x.view({1, rows, in}), w);
        EXPECT_EQ(nb.sizes(), (std::vector<int64_t>{1, rows, out}));
        EXPECT_LT((nb.view({rows, out}).to(at::kDouble) - (want - b.to(at::kDouble)))
                      .abs()
                      .max()
                      .item<double>(),
                  1e-5 * scale);
      }
    }
  }
}

// The packed kernel of the lean path against double-precision math, in each variant this CPU runs
// (portable, AVX2, AVX-512): row counts around its tiles (6 and 12 rows), its 48-row groups and
// its limit, output counts that end inside a panel or leave an odd panel, input widths that are
// not multiples of 8 or span two k-blocks, with and without a bias; and what it refuses.
TEST(PackedGemm, MatchesDoublePrecisionForEveryTile) {
  using namespace adtree::model;
  at::manual_seed(4);
  for (int64_t out : {5, 16, 37, 64, 300}) {
    for (int64_t in : {13, 64, 300}) {
      const auto w = at::randn({out, in});
      const auto b = at::randn({out});
      const auto pw = pack_weight(w);
      ASSERT_TRUE(pw.defined());
      for (int64_t rows : {1, 2, 3, 5, 6, 7, 11, 12, 13, 18, 25, 47, 48, 49, 64, 70}) {
        const auto x = at::randn({rows, in});
        const auto want = at::linear(x.to(at::kDouble), w.to(at::kDouble), b.to(at::kDouble));
        const double scale = want.abs().max().item<double>();
        for (int kernel = 0; kernel <= int(packed_kernel()); ++kernel) {  // each this CPU has
          force_packed_kernel(kernel);
          const auto got = packed_linear(x, pw, b).to(at::kDouble);
          EXPECT_LT((got - want).abs().max().item<double>(), 1e-5 * scale)
              << "out " << out << " in " << in << " rows " << rows << " kernel " << kernel;
        }
        force_packed_kernel(-1);
        const auto nb = packed_linear(x.view({1, rows, in}), pw).view({rows, out});
        EXPECT_LT((nb.to(at::kDouble) - (want - b.to(at::kDouble))).abs().max().item<double>(),
                  1e-5 * scale);
      }
    }
  }
  EXPECT_FALSE(pack_weight(at::randn({4, 4}, at::kDouble)).defined()) << "fp32 only";
  EXPECT_THROW(packed_linear(at::randn({2, 5}), pack_weight(at::randn({3, 4}))), std::exception);
}

// The panel products as the packed attention calls them, in each kernel variant: scores from query
// rows strided inside a qkv row against keys packed by pack_rows (a key count that ends inside a
// panel), and P @ V read from the value rows in place into output rows strided inside a wider
// row, whose other columns stay untouched.
// The load packs w1 and w3 as one matrix and wqkv with its q rows scaled straight from the stored
// tensors: the same panels, byte for byte, as packing their concatenation with the rows scaled by
// a tensor's mul_ (what the load did before), in fp32 and bf16, odd sizes included.
TEST(PackRows, StackedAndScaledRowsPackAsTheirConcatenation) {
  const double scale = 1.0 / std::sqrt(5.0);
  for (const auto dtype : {at::kFloat, at::kBFloat16}) {
    SCOPED_TRACE(c10::toString(dtype));
    const auto a = at::randn({21, 13}).to(dtype), b = at::randn({7, 13}).to(dtype);
    auto cat = at::cat({a, b}, 0).contiguous();
    cat.narrow(0, 0, 9).mul_(scale);
    const auto want = pack_inference_weight(cat);
    const auto got = pack_rows({a, b}, 9, float(scale));
    ASSERT_TRUE(got.defined());
    EXPECT_EQ(got.n_out, 28);
    EXPECT_EQ(got.in, 13);
    EXPECT_TRUE(at::equal(got.panels, want.panels));
    EXPECT_TRUE(at::equal(pack_rows({a}).panels, pack_inference_weight(a).panels));
  }
  EXPECT_FALSE(pack_rows({at::randn({4, 4}), at::randn({4, 5})}).defined()) << "one width";
  EXPECT_FALSE(pack_rows({at::randn({4, 4}, at::kDouble)}).defined()) << "fp32 or bf16 only";
}

TEST(PackedGemm, StridedViewsAsTheAttentionUsesThem) {
  using namespace adtree::model;
  at::manual_seed(5);
  const int64_t nq = 9, nk = 37, hd = 64;
  const auto qkv = at::randn({nq, 3 * hd});
  const auto K = at::randn({nk, hd}), V = at::randn({nk, hd}), P = at::rand({nq, nk});
  std::vector<float> packed(size_t((nk + 15) / 16 * hd * 16));
  pack_rows(K.data_ptr<float>(), nk, hd, hd, packed.data());
  const auto want_s = at::matmul(qkv.narrow(1, 0, hd).to(at::kDouble), K.to(at::kDouble).t());
  const auto want_o = at::matmul(P.to(at::kDouble), V.to(at::kDouble));
  for (int kernel = 0; kernel <= int(packed_kernel()); ++kernel) {
    force_packed_kernel(kernel);
    auto S = at::empty({nq, nk});
    panel_gemm(qkv.data_ptr<float>(), 3 * hd, nq, {packed.data(), nk, hd, hd * 16, 16},
               S.data_ptr<float>(), nk);
    EXPECT_LT((S.to(at::kDouble) - want_s).abs().max().item<double>(),
              1e-5 * want_s.abs().max().item<double>())
        << "kernel " << kernel;
    auto out = at::zeros({nq, 2 * hd});
    panel_gemm(P.data_ptr<float>(), nk, nq, {V.data_ptr<float>(), hd, nk, 16, hd},
               out.data_ptr<float>(), 2 * hd);
    EXPECT_LT((out.narrow(1, 0, hd).to(at::kDouble) - want_o).abs().max().item<double>(),
              1e-5 * want_o.abs().max().item<double>())
        << "kernel " << kernel;
    EXPECT_EQ(out.narrow(1, hd, hd).abs().max().item<float>(), 0.0f) << "wrote past its rows";
  }
  force_packed_kernel(-1);
}

// The draft head infers through the small-row kernel and trains through BLAS: the same logits.
TEST(Drafter, InferencePathMatchesTrainingPath) {
  using namespace adtree::model;
  auto g = GptConfig::preset("micro");
  Gpt target(g, init_params(gpt_param_specs(g), 1));
  const auto w = init_params(drafter_param_specs(g), 2);
  Drafter infer(target, w, /*inference=*/true), train(target, w, /*inference=*/false);
  const int64_t q = 5;
  const auto feats = at::randn({2, q, g.dim});
  const auto tokens = at::randint(0, g.vocab_size, {2, q}, at::kLong);
  const auto pos = at::arange(g.cond_len, g.cond_len + q, at::kLong);
  at::Tensor a, b;
  {
    c10::InferenceMode guard;
    a = infer.forward(nullptr, feats, tokens, pos, {}).logits;
  }
  b = train.forward(nullptr, feats, tokens, pos, {}).logits.detach();
  EXPECT_LT((a - b).abs().max().item<float>(), 1e-5f * b.abs().max().item<float>());
}
