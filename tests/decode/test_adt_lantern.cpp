// ADT-Tree's shape policy (SPEC_DECODING.md 5) and LANTERN's relaxed acceptance (section 4).
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "decode/tree/adt_policy.h"
#include "decode/verify/acceptance.h"
#include "decode/verify/lantern.h"
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
  auto up = AdtPolicy::adapt(s, {4, 6}, 0.75);       // positive: deeper, narrower
  EXPECT_EQ(up.d, 6);                                // ceil((4 + 8) / 2)
  EXPECT_EQ(up.k, 4);                                // floor((6 + 2) / 2)
  auto down = AdtPolicy::adapt(s, {5, 5}, 0.2);      // negative: shallower, wider
  EXPECT_EQ(down.d, 3);                              // floor((5 + 2) / 2)
  EXPECT_EQ(down.k, 8);                              // ceil((5 + 10) / 2)
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

namespace {
// Runs a scripted sequence of accepted lengths through the policy as the decoding loop does: the
// tree after root cell n is named by its first cell n + 1, a step that accepts a commits a + 1
// cells (a drafts and the bonus), alpha = a / d. Returns the shapes the trees were built with.
std::vector<TreeShape> run_script(Adjacency adjacency, const std::vector<int64_t>& accepted) {
  AdtPolicy p(settings(AdtMode::Bisect, adjacency), 4, 4);
  p.start();  // the prefill committed cell 0 with (d0, k0)
  std::vector<TreeShape> shapes;
  int64_t root = 0;
  for (int64_t a : accepted) {
    const auto s = p.shape_for(root + 1);
    shapes.push_back(s);
    std::vector<int64_t> cells;
    for (int64_t i = 0; i <= a; ++i) cells.push_back(root + 1 + i);
    p.update(s, double(a) / double(s.d), cells);
    root += a + 1;
  }
  return shapes;
}
void expect_shapes(const std::vector<TreeShape>& got, const std::vector<TreeShape>& want,
                   const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].d, want[i].d) << what << " step " << i;
    EXPECT_EQ(got[i].k, want[i].k) << what << " step " << i;
  }
}
}  // namespace

TEST(AdtPolicy, ScriptedAcceptanceGivesExpectedTrace) {
  // 4x4 grid; accepted lengths 4, 0, 0, 0, 2: the first step commits cells 1..5, the three runs of
  // zero commit only their bonus (cells 6, 7, 8), the last cells 9..11. Cell 8 starts row 2.
  const std::vector<int64_t> script{4, 0, 0, 0, 2};
  // none: pure bisection carried from step to step.
  expect_shapes(run_script(Adjacency::None, script), {{4, 6}, {6, 4}, {4, 7}, {3, 9}, {2, 10}},
                "none");
  // left: a step that committed only its bonus hands its shallower-wider shape to the next tree
  // (step 2 reads cell 6, the root, not cell 5); row starts read the cell above (step 3: cell 4).
  expect_shapes(run_script(Adjacency::Left, script), {{4, 6}, {6, 4}, {4, 7}, {6, 4}, {4, 7}},
                "left");
  // left+up: the average of left and up, rounded half up (step 2: (4, 7) and (6, 4) -> (5, 6)).
  expect_shapes(run_script(Adjacency::LeftUp, script), {{4, 6}, {6, 4}, {5, 6}, {6, 4}, {5, 6}},
                "left+up");
}

TEST(AdtPolicy, AdjacencyFirstTreeLeftRowStartAndLeftUpAverage) {
  const int64_t W = 4;
  AdtPolicy left(settings(AdtMode::Bisect, Adjacency::Left), 4, W);
  left.start();
  EXPECT_EQ(left.shape_for(1).d, 4);  // the very first tree reads cell 0: (d0, k0)
  EXPECT_EQ(left.shape_for(1).k, 6);
  left.update({4, 6}, 1.0, {1, 2});   // positive -> (6, 4) stored at cells 1 and 2
  left.update({4, 6}, 0.0, {3});      // negative -> (3, 8) stored at cell 3
  EXPECT_EQ(left.shape_for(3).d, 6);  // tree drafting cell 3 starts from its left, cell 2
  EXPECT_EQ(left.shape_for(4).d, 4);  // row start (1, 0): from the cell above, cell 0 = (d0, k0)
  left.update({4, 6}, 1.0, {W});      // (6, 4) at (1, 0)
  EXPECT_EQ(left.shape_for(2 * W).d, 6);  // row start (2, 0): from (1, 0)
  EXPECT_EQ(left.shape_for(2 * W).k, 4);

  AdtPolicy lu(settings(AdtMode::Bisect, Adjacency::LeftUp), 4, W);
  lu.start();
  lu.update({4, 6}, 1.0, {1});      // (6, 4) at (0, 1)
  lu.update({4, 6}, 0.0, {W + 0});  // (3, 8) at (1, 0)
  auto s = lu.shape_for(W + 1);     // left (1, 0) = (3, 8), up (0, 1) = (6, 4)
  EXPECT_EQ(s.d, 5);                // (3 + 6 + 1) / 2
  EXPECT_EQ(s.k, 6);                // (8 + 4 + 1) / 2
}

// The ablation baselines (docs/adt-tree.md): a random shape per tree within the bounds, the same
// for the same seed and cell; a shape from the draft's confidence, deep-narrow when sure.
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
  r.method.method = Method::Adt;
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
std::vector<double> relaxed_output(const LanternRule& rule, const std::vector<double>& p,
                                   int64_t x) {
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
  r.method.method = Method::Dynamic;
  r.method.dynamic_tree.budget = 12;
  r.method.verify = VerifyRule::Deterministic;  // the same lossless rule on both sides
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
