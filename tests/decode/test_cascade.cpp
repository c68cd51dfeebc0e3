// CASCADE's context-aware relaxed acceptance (SPEC_DECODING.md section 4): its two signals against
// independent arithmetic, its acceptance rule on hand-made distributions (chi-square against the
// probabilities the rule implies, which plausible wrong edits miss), and, switched off, token
// identity with the lossless rule it relaxes.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "decode/run.h"
#include "decode/settings/method_table.h"
#include "decode/verify/acceptance.h"
#include "decode/verify/cascade.h"
#include "exact_distribution.h"
#include "settings_error.h"
#include "spec_fixture.h"
#include "util/error.h"

using namespace adtree;
using namespace adtree::decode;
using adtree::testing::chi2_quantile;
using adtree::testing::chi_square;
using adtree::testing::validation_error;

namespace {
at::Tensor rows(const std::vector<std::vector<float>>& r) {
  auto t = at::empty({int64_t(r.size()), int64_t(r[0].size())}, at::kFloat);
  for (size_t i = 0; i < r.size(); ++i)
    for (size_t j = 0; j < r[i].size(); ++j) t[int64_t(i)][int64_t(j)] = r[i][j];
  return t;
}

// Root plus children with the given tokens at depth 1 (deterministic, rank order).
DraftTree fan(const std::vector<int64_t>& tokens, int64_t V) {
  DraftTree t;
  t.nodes.push_back(DraftNode{0, -1, 0, 0, 1, 0});
  t.child_dist.emplace_back();
  for (size_t i = 0; i < tokens.size(); ++i) {
    t.nodes.push_back(DraftNode{tokens[i], 0, 1, 0, 1, int32_t(i)});
    t.child_dist.push_back(at::full({V}, 1.0f / float(V)));
  }
  t.levels = 1;
  t.width = int64_t(tokens.size());
  return t;
}

// Outcome of one verification: 0 = accepted child 1, 1 = child 2, 2 + y = residual token y.
int64_t outcome(const AcceptResult& r) {
  if (!r.path.empty()) return r.path[0] - 1;
  return 2 + r.bonus;
}

std::map<int64_t, int64_t> draw(const DraftTree& tree, const at::Tensor& p, ChildRule rule,
                                const CascadeRule& c, int64_t n, uint64_t seed) {
  Rng rng(seed);
  std::map<int64_t, int64_t> counts;
  for (int64_t i = 0; i < n; ++i)
    ++counts[outcome(verify_tree(tree, p, rule, nullptr, 1, rng, &c))];
  return counts;
}

CascadeSettings off() {
  CascadeSettings s;
  s.tau_s = s.tau_c = 2.0;
  return s;
}
}  // namespace

TEST(Cascade, GateIsKlFromPToTheSoftmaxOfUnitLogits) {
  at::manual_seed(3);
  auto z = at::randn({3, 7}) * 3;
  auto p = at::softmax(z, -1);
  p[1][2] = 0;                       // a zero entry adds nothing
  const auto tree = fan({1, 2}, 7);  // three nodes: one gate per row
  CascadeRule rule(CascadeSettings{});
  rule.begin(tree, z, p);
  for (int64_t r = 0; r < 3; ++r) {
    double norm = 0, lse = 0, kl = 0;
    for (int64_t i = 0; i < 7; ++i) norm += std::pow(z[r][i].item<double>(), 2);
    norm = std::sqrt(norm);
    for (int64_t i = 0; i < 7; ++i) lse += std::exp(z[r][i].item<double>() / norm);
    for (int64_t i = 0; i < 7; ++i) {
      const double pi = p[r][i].item<double>();
      if (pi > 0) kl += pi * (std::log(pi) - (z[r][i].item<double>() / norm - std::log(lse)));
    }
    EXPECT_NEAR(rule.gate(r), kl, 1e-6) << "row " << r;
  }
}

TEST(Cascade, SignalsComeFromTheTargetAndDraftHeadRows) {
  const int64_t V = 4;
  // Root 0; children 1 (token 1), 2 (token 2), 3 (token 3); grandchildren 4 under 1 and 5 under 2.
  DraftTree t = fan({1, 2, 3}, V);
  t.nodes.push_back(DraftNode{0, 1, 2, 0, 1, 0});
  t.nodes.push_back(DraftNode{3, 2, 2, 0, 1, 0});
  t.child_dist.push_back(rows({{0, 1, 0, 0}})[0]);
  t.child_dist.push_back(rows({{0, 1, 0, 0}})[0]);
  t.child_dist[1] = rows({{0.5f, 0.5f, 0, 0}})[0];
  t.child_dist[2] = rows({{0.5f, 0.45f, 0.05f, 0}})[0];  // cos with node 1: 0.9965
  t.child_dist[3] = rows({{0, 0, 0, 1}})[0];             // orthogonal
  auto z =
      rows({{1, 0, 0, 0}, {1, 1, 0, 0}, {0, 1, 0, 0}, {-1, 0, 0, 0}, {1, 0, 0, 0}, {0, 0, 1, 0}});
  auto p = at::softmax(z, -1);
  CascadeSettings s;
  s.tau_s = 0.9;
  CascadeRule c(s);
  c.begin(t, z, p);
  EXPECT_NEAR(c.convergence(1), std::sqrt(0.5), 1e-9);  // cos(z_0, z_1)
  EXPECT_NEAR(c.convergence(2), 0.0, 1e-9);
  EXPECT_NEAR(c.convergence(3), -1.0, 1e-9);
  EXPECT_NEAR(c.convergence(4), std::sqrt(0.5), 1e-9);  // cos(z_1, z_4): the parent's row
  EXPECT_EQ(c.interchangeable(1), std::vector<int64_t>{2});
  EXPECT_EQ(c.interchangeable(2), std::vector<int64_t>{1});
  EXPECT_TRUE(c.interchangeable(3).empty());
  // Cousins 4 and 5 have the same rows: the same level, but not the same parent.
  EXPECT_EQ(c.interchangeable(4), std::vector<int64_t>{5});
  s.siblings_only = true;
  CascadeRule sib(s);
  sib.begin(t, z, p);
  EXPECT_TRUE(sib.interchangeable(4).empty());
  EXPECT_EQ(sib.interchangeable(1), std::vector<int64_t>{2});
  // The bonus counts a token's mass once and never the candidate's own token.
  t.nodes[2].token = 1;
  CascadeRule same(CascadeSettings{});
  same.begin(t, z, p);
  EXPECT_TRUE(same.interchangeable(1).empty());
}

TEST(Cascade, InterchangeableMassIsAcceptedAsPOverOneMinusBonus) {
  // Children 1 (token 1) and 2 (token 2) are interchangeable; convergence off. Child 1 is
  // accepted with min(1, p1 / (1 - p2)) = 0.2 / 0.7; if not, the residual p with p1 = 0 gives child
  // 2 probability 0.375 (its partner's mass is now 0); then the residual [0.2, 0, 0, 0.8].
  const int64_t V = 4;
  auto tree = fan({1, 2}, V);
  auto p =
      rows({{0.1f, 0.2f, 0.3f, 0.4f}, {0.25f, 0.25f, 0.25f, 0.25f}, {0.25f, 0.25f, 0.25f, 0.25f}});
  auto z = p.log();
  CascadeSettings s = off();
  s.tau_s = 0.5;  // the two children's rows are equal (uniform): cosine 1
  CascadeRule c(s);
  c.begin(tree, z, p);
  const double a1 = 0.2 / 0.7, rest = 1 - a1, a2 = rest * 0.375;
  const std::vector<double> expect{a1, a2, rest * 0.625 * 0.2, 0, 0, rest * 0.625 * 0.8};
  const int64_t n = 40000;
  auto counts = draw(tree, p, ChildRule::Deterministic, c, n, 11);
  EXPECT_LT(chi_square(counts, expect, n), chi2_quantile(3, 3.09));
  // Wrong edits: the bonus added to p (accept min(1, p + B)) or no relaxation at all.
  const std::vector<double> added{0.5, 0.5 * 0.375, 0.5 * 0.625 * 0.2, 0, 0, 0.5 * 0.625 * 0.8};
  EXPECT_GT(chi_square(counts, added, n), 10 * chi2_quantile(3, 3.09));
  CascadeRule none(off());
  none.begin(tree, z, p);
  const double b2 = 0.8 * 0.375;  // lossless: child 1 w.p. 0.2, child 2 w.p. 0.8 * 0.375
  const std::vector<double> lossless{0.2, b2, 0.8 * 0.625 * 0.2, 0, 0, 0.8 * 0.625 * 0.8};
  EXPECT_LT(chi_square(draw(tree, p, ChildRule::Deterministic, none, n, 12), lossless, n),
            chi2_quantile(3, 3.09));
  EXPECT_GT(chi_square(counts, lossless, n), 10 * chi2_quantile(3, 3.09));
}

TEST(Cascade, ConvergenceBonusNeedsTheGateAndLowersQ) {
  // One child (token 1) whose target row has cosine 0.8 with the root's: under q(x) = 0.5 it is
  // accepted with p / (q - 0.8) -> always, with a point mass (q = 1) with 0.1 / 0.2 = 0.5, and with
  // the gate closed (kappa 0) with the lossless 0.1 / 0.5 and 0.1.
  const int64_t V = 4;
  auto tree = fan({1}, V);
  auto p = rows({{0.3f, 0.1f, 0.3f, 0.3f}, {0.25f, 0.25f, 0.25f, 0.25f}});
  auto z = rows({{1, 0, 0, 0}, {0.8f, 0.6f, 0, 0}});
  CascadeSettings s = off();
  s.tau_c = 0.7, s.kappa = 100;
  CascadeRule open(s);
  open.begin(tree, z, p);
  EXPECT_NEAR(open.convergence(1), 0.8, 1e-6);
  EXPECT_NEAR(open.bonus(0, 1, {0.3, 0.1, 0.3, 0.3}), 0.8, 1e-6);
  const int64_t n = 40000;
  auto accept_rate = [&](const CascadeRule& c, ChildRule rule, uint64_t seed) {
    return double(draw(tree, p, rule, c, n, seed)[0]) / double(n);
  };
  const double se = std::sqrt(0.25 / double(n));
  EXPECT_NEAR(accept_rate(open, ChildRule::Deterministic, 1), 0.5, 5 * se);
  tree.child_dist[0] = rows({{0.2f, 0.5f, 0.2f, 0.1f}})[0];  // q(x) = 0.5 < B
  EXPECT_EQ(accept_rate(open, ChildRule::WithoutReplacement, 2), 1.0);
  s.kappa = 0;
  CascadeRule closed(s);
  closed.begin(tree, z, p);
  EXPECT_EQ(closed.bonus(0, 1, {0.3, 0.1, 0.3, 0.3}), 0.0);
  EXPECT_NEAR(accept_rate(closed, ChildRule::WithoutReplacement, 3), 0.2, 5 * se);
  tree.child_dist[0] = at::Tensor();
  EXPECT_NEAR(accept_rate(closed, ChildRule::Deterministic, 4), 0.1, 5 * se);
}

TEST(Cascade, SwitchedOffIsTokenIdenticalToTheLosslessRule) {
  // Small weights: diffuse rows, where a bonus can matter (at scale 0.3 the rows are one-hot).
  adtree::testing::SpecFixture f(adtree::testing::SpecFixture::micro(), 1, 0.05);
  auto c = f.cond({1, 2}, true);
  for (auto method : {Method::Static, Method::Dynamic, Method::Adt}) {
    for (auto rule : {VerifyRule::Sampled, VerifyRule::Deterministic}) {
      DecodeRequest r;
      r.method.method = method;
      r.method.dynamic_tree.budget = 12;
      r.method.verify = rule;
      r.seed = 5;
      SpecOptions o;
      o.budget = 12;
      auto src1 = make_eagle_source(*f.head, *f.target, 2);
      auto lossless = generate_speculative(*f.target, *src1, c, r, o);
      r.method.acceptance = Acceptance::Cascade;
      r.method.cascade = off();
      auto src2 = make_eagle_source(*f.head, *f.target, 2);
      auto relaxed = generate_speculative(*f.target, *src2, c, r, o);
      EXPECT_EQ(lossless.tokens, relaxed.tokens) << to_string(method) << " " << to_string(rule);
      EXPECT_EQ(relaxed.stats.summary.relaxed, 0);
      EXPECT_EQ(relaxed.stats.method, to_string(method) + "+cascade");
      EXPECT_FALSE(relaxed.stats.settings.lossless);
      // Switched on with loose thresholds, it lets tokens through that the lossless test refused.
      r.method.cascade = CascadeSettings{};
      r.method.cascade.tau_s = 0.2, r.method.cascade.tau_c = 0.2, r.method.cascade.kappa = 100;
      auto src3 = make_eagle_source(*f.head, *f.target, 2);
      auto on = generate_speculative(*f.target, *src3, c, r, o);
      EXPECT_GT(on.stats.summary.relaxed, 0) << to_string(method) << " " << to_string(rule);
    }
  }
}

TEST(Cascade, SwitchedOffAtGreedyIsAr) {
  adtree::testing::SpecFixture f(adtree::testing::SpecFixture::micro());
  auto c = f.cond({3}, true);
  DecodeRequest r;
  r.method.method = Method::Adt;
  r.method.acceptance = Acceptance::Cascade;
  r.method.cascade = off();
  r.sampling.temperature = 0;
  SpecOptions o;
  o.budget = 12;
  auto src = make_eagle_source(*f.head, *f.target, 2);
  auto ar = generate_ar(*f.target, c, r.sampling, 0);
  EXPECT_EQ(generate_speculative(*f.target, *src, c, r, o).tokens, ar.tokens);
}

TEST(Cascade, BadSettingsAreClearErrors) {
  auto err = [](const MethodSettings& m) { return validation_error(m, 64, 16); };
  MethodSettings m;
  m.method = Method::Sjd;
  m.acceptance = Acceptance::Cascade;
  EXPECT_NE(err(m).find("draft trees"), std::string::npos) << err(m);
  m.method = Method::Adt;
  m.verify = VerifyRule::Coupled;
  EXPECT_NE(err(m).find("coupling"), std::string::npos) << err(m);
  m.verify = VerifyRule::Auto;
  EXPECT_EQ(err(m), "");
  EXPECT_EQ(resolve_verify(m, SamplingParams{}), VerifyRule::Sampled);
  m.cascade.kappa = -1;
  EXPECT_NE(err(m).find("kappa"), std::string::npos);
  m.cascade.kappa = 4, m.cascade.tau_c = std::nan("");
  EXPECT_NE(err(m).find("tau_c"), std::string::npos);
  // The settings travel through JSON (run files, PNG metadata) unchanged.
  m.cascade = CascadeSettings{0.7, 0.8, 3.5, true};
  auto back = MethodSettings::from_json(m.to_json());
  EXPECT_EQ(back.acceptance, Acceptance::Cascade);
  EXPECT_EQ(back.cascade.tau_s, 0.7);
  EXPECT_EQ(back.cascade.tau_c, 0.8);
  EXPECT_EQ(back.cascade.kappa, 3.5);
  EXPECT_TRUE(back.cascade.siblings_only);
  EXPECT_THROW(acceptance_from_string("cascada"), Error);
}
