// ADT-Tree's shape policy (SPEC_DECODING.md 5) and LANTERN's relaxed acceptance (section 4).
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "decode/acceptance.h"
#include "decode/adt_policy.h"
#include "decode/lantern.h"
#include "spec_fixture.h"

using namespace adtree;
using namespace adtree::decode;

namespace {
AdtSettings settings(AdtMode mode, Adjacency adj) {
  AdtSettings s;
  s.d0 = 4, s.k0 = 6, s.d_min = 2, s.d_max = 8, s.k_min = 2, s.k_max = 10, s.beta = 0.5;
  s.mode = mode;
  s.adjacency = adj;
  return s;
}
}  // namespace

TEST(AdtPolicy, BisectMovesHalfWayToTheBounds) {
  auto s = settings(AdtMode::Bisect, Adjacency::Left);
  auto up = AdtPolicy::adapt(s, {4, 6}, 0.75);  // positive: deeper, narrower
  EXPECT_EQ(up.d, 6);                            // ceil((4 + 8) / 2)
  EXPECT_EQ(up.k, 4);                            // floor((6 + 2) / 2)
  auto down = AdtPolicy::adapt(s, {5, 5}, 0.2);  // negative: shallower, wider
  EXPECT_EQ(down.d, 3);                          // floor((5 + 2) / 2)
  EXPECT_EQ(down.k, 8);                          // ceil((5 + 10) / 2)
  EXPECT_EQ(AdtPolicy::adapt(s, {7, 3}, 0.5).d, 8);  // alpha == beta counts as positive
  auto top = AdtPolicy::adapt(s, {8, 2}, 1.0);       // stays at the bounds
  EXPECT_EQ(top.d, 8);
  EXPECT_EQ(top.k, 2);
}

TEST(AdtPolicy, StepModeMovesByFixedStepsWithinBounds) {
  auto s = settings(AdtMode::Step, Adjacency::Left);
  s.step_d = 2, s.step_k = 3;
  auto up = AdtPolicy::adapt(s, {4, 6}, 0.9);
  EXPECT_EQ(up.d, 6);
  EXPECT_EQ(up.k, 3);
  auto down = AdtPolicy::adapt(s, {3, 9}, 0.0);
  EXPECT_EQ(down.d, 2);   // clamped at d_min
  EXPECT_EQ(down.k, 10);  // clamped at k_max
}

TEST(AdtPolicy, ScriptedAcceptanceGivesExpectedTrace) {
  // 4x4 grid, "none" adjacency = pure bisection carried from step to step.
  AdtPolicy p(settings(AdtMode::Bisect, Adjacency::None), 4, 4);
  const int64_t accepted[] = {4, 6, 0, 1, 3};
  const TreeShape expect[] = {{4, 6}, {6, 4}, {7, 3}, {4, 7}, {3, 9}};
  int64_t cell = 0;
  for (int i = 0; i < 5; ++i) {
    auto s = p.shape_for(cell);
    EXPECT_EQ(s.d, expect[i].d) << "step " << i;
    EXPECT_EQ(s.k, expect[i].k) << "step " << i;
    p.update(s, accepted[i], {cell + 1});
    ++cell;
  }
}

TEST(AdtPolicy, AdjacencyFirstTreeLeftRowStartAndLeftUpAverage) {
  const int64_t W = 4;
  AdtPolicy left(settings(AdtMode::Bisect, Adjacency::Left), 4, W);
  EXPECT_EQ(left.shape_for(0).d, 4);  // the very first tree: (d0, k0)
  EXPECT_EQ(left.shape_for(0).k, 6);
  left.update({4, 6}, 4, {0, 1});  // positive -> (6, 4) stored at cells 0 and 1
  left.update({4, 6}, 0, {2, 3});  // negative -> (3, 8) stored at cells 2 and 3
  EXPECT_EQ(left.shape_for(2).d, 6);  // tree rooted at cell 2 starts from cell 1
  EXPECT_EQ(left.shape_for(3).d, 3);  // ... at cell 3 from cell 2
  EXPECT_EQ(left.shape_for(W).d, 6);  // row start (1, 0): from the cell above, (0, 0)
  EXPECT_EQ(left.shape_for(W).k, 4);

  AdtPolicy lu(settings(AdtMode::Bisect, Adjacency::LeftUp), 4, W);
  lu.update({4, 6}, 4, {1});      // (6, 4) at (0, 1)
  lu.update({4, 6}, 0, {W + 0});  // (3, 8) at (1, 0)
  auto s = lu.shape_for(W + 1);   // left (1, 0) = (3, 8), up (0, 1) = (6, 4)
  EXPECT_EQ(s.d, 5);              // (3 + 6 + 1) / 2
  EXPECT_EQ(s.k, 6);              // (8 + 4 + 1) / 2
}

// The ablation baselines (docs/adt-tree.md): a random shape per tree within the bounds, the same for
// the same seed and cell; a shape from the draft's confidence, deep-narrow when sure.
TEST(AdtPolicy, RandomAndConfidenceBaselinesStayInBoundsWithoutAdjacency) {
  const auto s = settings(AdtMode::Bisect, Adjacency::Random);
  AdtPolicy a(s, 8, 8, 7), b(s, 8, 8, 7), c(s, 8, 8, 8);
  std::set<std::pair<int64_t, int64_t>> seen;
  int differs = 0;
  for (int64_t cell = 0; cell < 64; ++cell) {
    const auto t = a.shape_for(cell);
    EXPECT_GE(t.d, s.d_min);
    EXPECT_LE(t.d, s.d_max);
    EXPECT_GE(t.k, s.k_min);
    EXPECT_LE(t.k, s.k_max);
    EXPECT_EQ(t.d, b.shape_for(cell).d);  // reproducible
    EXPECT_EQ(t.k, b.shape_for(cell).k);
    differs += c.shape_for(cell).d != t.d ? 1 : 0;
    seen.insert({t.d, t.k});
    a.update(t, 0, {cell});  // outcomes do not steer it
  }
  EXPECT_GT(seen.size(), 20u) << "shapes should spread over the 7 x 9 box";
  EXPECT_GT(differs, 20) << "another seed, other shapes";

  AdtPolicy conf(settings(AdtMode::Bisect, Adjacency::Confidence), 4, 4);
  std::string origin;
  const auto sure = conf.shape_for(5, &origin, 1.0);
  EXPECT_EQ(sure.d, 8);
  EXPECT_EQ(sure.k, 2);
  EXPECT_NE(origin.find("confidence"), std::string::npos);
  const auto unsure = conf.shape_for(5, nullptr, 0.0);
  EXPECT_EQ(unsure.d, 2);
  EXPECT_EQ(unsure.k, 10);
  const auto half = conf.shape_for(5, nullptr, 0.5);
  EXPECT_EQ(half.d, 5);
  EXPECT_EQ(half.k, 6);
}

TEST(AdtPolicy, BaselinesAreLosslessAtGreedy) {
  adtree::testing::SpecFixture f(adtree::testing::SpecFixture::micro());
  auto c = f.cond({1, 5}, true);
  DecodeRequest r;
  r.method.method = "adt";
  r.sampling.cfg_scale = 2.0;
  r.sampling.temperature = 0;
  auto ar = generate_ar(*f.target, c, r.sampling, 0);
  for (auto adj : {Adjacency::Random, Adjacency::Confidence}) {
    r.method.adt.adjacency = adj;
    auto src = make_eagle_source(*f.head, *f.target, 2);
    SpecOptions o;
    o.budget = 20;
    auto res = generate_speculative(*f.target, *src, c, r, o);
    EXPECT_EQ(res.tokens, ar.tokens) << to_string(adj);
  }
}

namespace {
// Exact output distribution of one relaxed decision for deterministic draft x under p:
// P(x) = min(1, p~(x)); otherwise a sample from p with x and its absorbed neighbours removed.
std::vector<double> relaxed_output(const LanternRule& rule, const std::vector<double>& p, int64_t x) {
  std::vector<int64_t> absorbed;
  const double px = std::min(1.0, rule.relaxed(p, x, absorbed));
  std::vector<double> rest = p;
  rest[size_t(x)] = 0;
  for (auto a : absorbed) rest[size_t(a)] = 0;
  double s = 0;
  for (double v : rest) s += v;
  std::vector<double> out(p.size(), 0.0);
  out[size_t(x)] = px;
  for (size_t i = 0; i < p.size(); ++i) {
    if (s > 0) out[i] += (1 - px) * rest[i] / s;
  }
  return out;
}
at::Tensor line_codebook(int64_t V) {  // codes on a line: neighbours are the adjacent ids
  return at::arange(V, at::kFloat).unsqueeze(1) * at::ones({1, 2});
}
}  // namespace

TEST(Lantern, NeighbourTableIsNearestFirstWithoutSelf) {
  auto nb = latent_neighbours(line_codebook(6), 2);
  EXPECT_EQ(nb.size(0), 6);
  EXPECT_EQ(nb[0][0].item<int64_t>(), 1);
  EXPECT_EQ(nb[0][1].item<int64_t>(), 2);
  auto n3 = nb[3];
  EXPECT_TRUE((n3[0].item<int64_t>() == 2 || n3[0].item<int64_t>() == 4));
}

TEST(Lantern, DeltaModeStaysWithinDeltaInTotalVariation) {
  const std::vector<double> p{0.05, 0.1, 0.3, 0.2, 0.15, 0.1, 0.06, 0.04};
  auto nb = latent_neighbours(line_codebook(8), 4);
  for (double delta : {0.0, 0.05, 0.1, 0.25, 0.5}) {
    LanternSettings s;
    s.mode = LanternMode::Delta, s.k = 4, s.delta = delta;
    LanternRule rule(nb, s);
    for (int64_t x = 0; x < 8; ++x) {
      auto out = relaxed_output(rule, p, x);
      double tv = 0;
      for (size_t i = 0; i < p.size(); ++i) tv += std::abs(out[i] - p[i]);
      EXPECT_LE(tv / 2, delta + 1e-12) << "delta " << delta << " x " << x;
    }
  }
}

TEST(Lantern, LambdaModeKeepsRelaxedProbabilityBelowLambdaP) {
  const std::vector<double> p{0.05, 0.1, 0.3, 0.2, 0.15, 0.1, 0.06, 0.04};
  auto nb = latent_neighbours(line_codebook(8), 4);
  LanternSettings s;
  s.mode = LanternMode::Lambda, s.k = 4, s.lambda = 2.0;
  LanternRule rule(nb, s);
  std::vector<int64_t> absorbed;
  for (int64_t x = 0; x < 8; ++x) {
    const double r = rule.relaxed(p, x, absorbed);
    EXPECT_LE(r, 2.0 * p[size_t(x)] + 1e-12);
    EXPECT_GE(r, p[size_t(x)]);
  }
  // x = 2 (p 0.3) may absorb up to 0.3: its nearest neighbours 1 or 3 (0.1 / 0.2) fit.
  EXPECT_GT(rule.relaxed(p, 2, absorbed), 0.3);
}

TEST(Lantern, DeltaZeroIsTokenIdenticalToLossless) {
  adtree::testing::SpecFixture f(adtree::testing::SpecFixture::micro());
  auto c = f.cond({1, 2}, true);
  DecodeRequest r;
  r.method.method = "dynamic";
  r.method.dynamic_tree.budget = 12;
  r.seed = 9;
  auto nb = latent_neighbours(at::randn({f.cfg.vocab_size, 8}), 10);
  LanternSettings s;
  s.delta = 0.0;
  s.k = 10;
  LanternRule rule(nb, s);
  SpecOptions lossless, relaxed;
  lossless.budget = relaxed.budget = 12;
  relaxed.lantern = &rule;
  auto src1 = make_eagle_source(*f.head, *f.target, 2);
  auto src2 = make_eagle_source(*f.head, *f.target, 2);
  auto a = generate_speculative(*f.target, *src1, c, r, lossless);
  auto b = generate_speculative(*f.target, *src2, c, r, relaxed);
  EXPECT_EQ(a.tokens, b.tokens);
  // And a generous delta does accept more.
  s.delta = 0.5;
  LanternRule loose(nb, s);
  relaxed.lantern = &loose;
  auto src3 = make_eagle_source(*f.head, *f.target, 2);
  auto l = generate_speculative(*f.target, *src3, c, r, relaxed);
  EXPECT_GE(l.stats.summary.tau, a.stats.summary.tau);
}
