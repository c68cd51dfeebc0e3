// Shared-noise coupling (SPEC_DECODING.md 4): AR samples each cell as the Gumbel-max
// argmax(log p + g) with noise keyed by (seed, cell) alone, and every coupled method verifies
// "is the draft the target's Gumbel-max choice?", so its tokens equal coupled AR's exactly, at any
// temperature and filtering, whatever the drafts are. Proven here token for token; the Gumbel-max
// sampler itself is checked against the exact distribution.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "decode/jacobi/pjd.h"
#include "decode/settings/method_table.h"
#include "decode/tree/budget.h"
#include "decode/tree/tree_builder.h"
#include "decode/verify/coupling.h"
#include "exact_distribution.h"
#include "spec_fixture.h"
#include "util/error.h"

using namespace adtree;
using namespace adtree::decode;
using adtree::testing::chi2_quantile;
using adtree::testing::SpecFixture;

namespace {

struct Sampling {
  double temperature;
  bool filters;  // top-k 5 and top-p 0.9
  bool cfg;
};

DecodeRequest coupled_request(const std::string& method, const Sampling& s, uint64_t seed) {
  DecodeRequest r;
  r.method.method = adtree::decode::method_from_string(method);
  r.method.verify = VerifyRule::Coupled;
  r.method.dynamic_tree.budget = 16;
  r.method.adt.d_max = 6;
  r.method.jacobi.window = 6;
  r.method.jacobi.paths = 3, r.method.jacobi.path_length = 5;
  r.sampling.cfg_scale = s.cfg ? 2.0 : 1.0;
  r.sampling.temperature = s.temperature;
  if (s.filters) r.sampling.top_k = 5, r.sampling.top_p = 0.9;
  r.seed = seed;
  return r;
}

DecodeResult run_method(const SpecFixture& f, DraftSource* src, const model::Condition& c,
                        const DecodeRequest& r) {
  SpecOptions o;
  o.budget = r.method.dynamic_tree.budget;
  if (is_jacobi(r.method.method)) return generate_jacobi(*f.target, c, r, o);
  return generate_speculative(*f.target, *src, c, r, o);
}

}  // namespace

TEST(CoupledIdentity, EveryCoupledMethodEqualsCoupledArAtAnyTemperature) {
  SpecFixture f(SpecFixture::micro());
  const int64_t batch_cfg = 2, batch_plain = 1;
  int64_t oracle_tokens = 0, oracle_forwards = 0;
  for (const Sampling& s :
       {Sampling{0.7, false, true}, Sampling{1.0, false, true}, Sampling{1.3, false, true},
        Sampling{1.0, true, true}, Sampling{0.7, true, false}, Sampling{1.3, false, false}}) {
    for (auto words : std::vector<std::vector<int64_t>>{{1, 5}, {3}}) {
      auto c = f.cond(words, s.cfg);
      for (uint64_t seed = 0; seed < 5; ++seed) {
        auto base = coupled_request("ar", s, seed);
        auto ar = generate_ar(*f.target, c, base.sampling, seed);
        for (const char* m : {"static", "dynamic", "adt", "sjd", "pathspec", "sjd-pac"}) {
          // The random head drafts badly, the target drafting for itself (oracle) well: both must
          // give AR's tokens; the oracle also shows that drafts are accepted.
          for (bool oracle : {false, true}) {
            const bool jacobi = is_jacobi(method_from_string(m));
            if (jacobi && oracle) continue;
            const int64_t b = s.cfg ? batch_cfg : batch_plain;
            auto src =
                oracle ? make_model_source(*f.target, b) : make_eagle_source(*f.head, *f.target, b);
            auto res = run_method(f, jacobi ? nullptr : src.get(), c, coupled_request(m, s, seed));
            ASSERT_EQ(res.tokens, ar.tokens)
                << m << (oracle ? " (oracle)" : "") << " T " << s.temperature << " filters "
                << s.filters << " cfg " << s.cfg << " seed " << seed;
            EXPECT_EQ(res.stats.settings.verify, "coupled");
            EXPECT_TRUE(res.stats.settings.lossless) << m;
            if (oracle) {
              oracle_tokens += res.stats.summary.tokens;
              oracle_forwards += res.stats.summary.target_forwards;
            }
          }
        }
      }
    }
  }
  // The oracle's coupled drafts are the target's own Gumbel-max choices: accepted nearly always.
  EXPECT_GT(double(oracle_tokens) / double(oracle_forwards), 3.0)
      << "coupled drafts must be accepted";
}

// The linear CFG schedule (a sampling setting of the table) is part of p: every lossless method,
// greedy and coupled, still commits AR's tokens under it, and it changes the picture.
TEST(CoupledIdentity, LinearCfgScheduleKeepsEveryMethodOnAr) {
  SpecFixture f(SpecFixture::micro());
  auto c = f.cond({1, 5}, true);
  bool changed = false;
  for (double t : {0.0, 1.0}) {
    for (uint64_t seed = 0; seed < 3; ++seed) {
      auto base = coupled_request("ar", Sampling{t, false, true}, seed);
      base.sampling.cfg_scale = 4.0;
      const auto constant = generate_ar(*f.target, c, base.sampling, seed);
      base.sampling.cfg_schedule = CfgSchedule::Linear;
      const auto ar = generate_ar(*f.target, c, base.sampling, seed);
      changed = changed || ar.tokens != constant.tokens;
      for (const char* m : {"static", "dynamic", "adt", "sjd", "pathspec", "sjd-pac", "pjd"}) {
        auto r = coupled_request(m, Sampling{t, false, true}, seed);
        r.sampling = base.sampling;
        r.method.pjd.max_rows = 1;  // one row at a time: PJD's lossless setting
        const bool jacobi = is_jacobi(r.method.method);
        auto src = make_eagle_source(*f.head, *f.target, 2);
        const auto res = r.method.method == Method::Pjd
                             ? generate_pjd(*f.target, c, r)
                             : run_method(f, jacobi ? nullptr : src.get(), c, r);
        ASSERT_EQ(res.tokens, ar.tokens) << m << " T " << t << " seed " << seed;
        EXPECT_TRUE(res.stats.settings.lossless) << m;
      }
    }
  }
  EXPECT_TRUE(changed) << "the linear schedule changed no token: is it applied at all?";
}

TEST(CoupledIdentity, SameSeedSamePictureDifferentSeedDifferentPicture) {
  SpecFixture f(SpecFixture::micro());
  auto c = f.cond({2, 4}, true);
  Sampling s{1.0, false, true};
  auto a = generate_ar(*f.target, c, coupled_request("ar", s, 7).sampling, 7);
  auto b = generate_ar(*f.target, c, coupled_request("ar", s, 7).sampling, 7);
  auto other = generate_ar(*f.target, c, coupled_request("ar", s, 8).sampling, 8);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_NE(a.tokens, other.tokens);
  EXPECT_EQ(a.stats.settings.verify, "coupled");
}

// The noise of a cell is a function of (seed, cell, token) alone: the order in which cells are
// visited, or how many were visited before, changes nothing.
TEST(CouplingNoise, CounterBasedAndOrderFree) {
  CouplingNoise a(42, 16), b(42, 16), c(43, 16);
  const auto first = a.weights(5);
  b.weights(9), b.weights(2);
  EXPECT_EQ(b.weights(5), first);
  EXPECT_NE(c.weights(5), first);
  EXPECT_NE(a.weights(6), first);
  a.forget_before(6);
  EXPECT_EQ(a.weights(5), first);  // recomputed identically after being dropped
  for (double w : first) EXPECT_GT(w, 0.0);
}

// Gumbel-max over seeds is an exact sample of the processed p: chi-square against p itself after
// temperature, top-k and top-p, and independence of two cells of the same seed (a sampler that
// reused one noise vector for every cell fails the joint test).
TEST(CouplingNoise, GumbelMaxMatchesTheProcessedDistributionExactly) {
  const int64_t V = 6, n = 30000;
  auto logits =
      at::tensor(std::vector<float>{1.2f, 0.3f, -0.4f, 0.9f, -1.5f, 0.1f}).view({1, 1, V});
  for (const auto& [temp, k, top_p] : std::vector<std::tuple<double, int64_t, double>>{
           {1.0, 0, 1.0}, {0.7, 4, 1.0}, {1.4, 0, 0.85}}) {
    SamplingParams sp;
    sp.cfg_scale = 1.0, sp.temperature = temp, sp.top_k = k, sp.top_p = top_p;
    auto p = LogitsProcessor(sp).process(logits, 0).probs[0].contiguous();
    std::vector<double> exact(V), pair_exact(V * V);
    for (int64_t i = 0; i < V; ++i) exact[size_t(i)] = p[i].item<double>();
    for (int64_t i = 0; i < V * V; ++i)
      pair_exact[size_t(i)] = exact[size_t(i / V)] * exact[size_t(i % V)];
    std::map<int64_t, int64_t> counts, pairs;
    for (int64_t s = 0; s < n; ++s) {
      CouplingNoise noise(uint64_t(s), V);
      const int64_t x = noise.choose(p, 3), y = noise.choose(p, 4);
      ASSERT_GT(exact[size_t(x)], 0.0) << "a filtered token was sampled";
      counts[x]++;
      pairs[x * V + y]++;
    }
    int64_t kept = 0, kept_pairs = 0;
    for (double e : exact) kept += e > 0;
    for (double e : pair_exact) kept_pairs += e > 0;
    EXPECT_LT(adtree::testing::chi_square(counts, exact, n), chi2_quantile(double(kept - 1), 3.72))
        << "T " << temp << " top-k " << k << " top-p " << top_p;
    EXPECT_LT(adtree::testing::chi_square(pairs, pair_exact, n),
              chi2_quantile(double(kept_pairs - 1), 3.72))
        << "two cells of one seed are not independent";
  }
}

TEST(CouplingNoise, MaximalCouplingKeepsThePreviousDrawAsOftenAsPossible) {
  // prev ~ q_old = (0.5, 0.3, 0.2), then the coupled draw for q_new = (0.2, 0.5, 0.3): the draw is
  // q_new-distributed and equals prev with probability sum_x min(q_old, q_new) = 0.7, the most any
  // coupling allows (independent draws would agree with probability 0.31).
  const std::vector<float> q_old{0.5f, 0.3f, 0.2f}, q_new{0.2f, 0.5f, 0.3f};
  Rng rng(3);
  const int64_t n = 40000;
  std::map<int64_t, int64_t> counts;
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t prev = draw_index({0.5, 0.3, 0.2}, rng);
    const int64_t x = maximal_coupling_draw(prev, q_old.data(), q_new.data(), 3, rng);
    counts[x]++;
    kept += x == prev;
  }
  EXPECT_LT(adtree::testing::chi_square(counts, {0.2, 0.5, 0.3}, n), chi2_quantile(2, 3.72));
  EXPECT_NEAR(double(kept) / double(n), 0.7, 0.01);
  // A point-mass previous draft (a spatial-init guess) is kept with q_new(prev).
  std::map<int64_t, int64_t> pm;
  for (int64_t i = 0; i < n; ++i) pm[maximal_coupling_draw(1, nullptr, q_new.data(), 3, rng)]++;
  EXPECT_LT(adtree::testing::chi_square(pm, {0.2, 0.5, 0.3}, n), chi2_quantile(2, 3.72));
}

// ---------------------------------------------------------------------------------------------
// Drafting bounded by the budget gives exactly the N best nodes of the full tree, with fewer
// draft rows fed: a frontier node already below the N-th best score is never expanded.
namespace {
class CountingSource : public DraftSource {
 public:
  explicit CountingSource(DraftSource& inner) : inner_(inner) {}
  void start(const model::Condition& c, const at::Tensor& f) override { inner_.start(c, f); }
  at::Tensor begin_step(const std::vector<int64_t>& t, const at::Tensor& f, int64_t i) override {
    return inner_.begin_step(t, f, i);
  }
  at::Tensor expand(const std::vector<DraftInput>& nodes, std::vector<int64_t>& rows) override {
    fed += int64_t(nodes.size());
    return inner_.expand(nodes, rows);
  }
  at::Tensor expand_on_device(const at::Tensor& t, const at::Tensor& p, int64_t i) override {
    fed += t.numel();
    return inner_.expand_on_device(t, p, i);
  }
  void end_step() override { inner_.end_step(); }
  int64_t scratch_rows() const override { return inner_.scratch_rows(); }
  int64_t fed = 0;

 private:
  DraftSource& inner_;
};

std::set<std::vector<int64_t>> paths_of(const DraftTree& t) {
  std::set<std::vector<int64_t>> out;
  for (int64_t i = 1; i < t.size(); ++i) {
    std::vector<int64_t> p;
    for (int64_t a = i; a > 0; a = t.nodes[size_t(a)].parent)
      p.insert(p.begin(), t.nodes[size_t(a)].token);
    out.insert(p);
  }
  return out;
}
}  // namespace

TEST(TreeBuilder, BudgetBoundedDraftingKeepsTheBestNodesAndFeedsFewerRows) {
  SpecFixture f(SpecFixture::micro());
  auto c = f.cond({1}, true);
  auto inner = make_eagle_source(*f.head, *f.target, 2);
  CountingSource src(*inner);
  auto pre_cache = f.target->new_cache(2);
  auto pre = f.target->prefill(pre_cache, c);
  auto feat = pre.hidden.narrow(1, pre.hidden.size(1) - 1, 1);
  src.start(c, feat);
  SamplingParams sp;
  LogitsProcessor proc(sp);
  ChildPicker picker;
  auto build = [&](int64_t levels, int64_t width, int64_t budget) {
    auto logits = src.begin_step({3}, feat, 0);
    DraftContext ctx{src, proc, picker, logits, 3, 0, 20};
    src.fed = 0;
    auto t = build_dynamic_tree(ctx, levels, width, budget);
    src.end_step();
    return t;
  };
  for (int64_t budget : {3, 6, 10}) {
    auto full = build(8, 4, 0);
    const int64_t full_rows = src.fed;
    auto bounded = build(8, 4, budget);
    const int64_t bounded_rows = src.fed;
    // The full tree's N best by score, ties to the earlier node, as the rerank keeps them.
    std::vector<int64_t> order;
    for (int64_t i = 1; i < full.size(); ++i) order.push_back(i);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return full.nodes[size_t(a)].score > full.nodes[size_t(b)].score;
    });
    DraftTree best;
    best.nodes.push_back(full.nodes[0]);
    order.resize(size_t(budget));
    std::sort(order.begin(), order.end());
    std::map<int64_t, int64_t> id{{0, 0}};
    for (int64_t i : order) {
      auto n = full.nodes[size_t(i)];
      n.parent = id.at(n.parent);
      id[i] = best.size();
      best.nodes.push_back(n);
    }
    EXPECT_EQ(paths_of(bounded), paths_of(best)) << "N " << budget;
    EXPECT_LE(bounded.levels, budget);
    EXPECT_LT(bounded_rows, full_rows) << "N " << budget << ": drafting did not stop early";
  }
}

TEST(BadSettings, TreesTooLargeForTheDraftHeadFailBeforeGenerating) {
  SpecFixture f(SpecFixture::micro());
  MethodSettings m;
  m.method = Method::Adt;
  const int64_t vocab = 16384;  // a LlamaGen codebook: k_max = vocab is a valid width bound
  m.adt.k_max = vocab, m.adt.d_max = 64;
  m.dynamic_tree.budget = 0;
  try {
    m.validate(vocab, 256);
    ADD_FAILURE() << "oversized ADT settings passed validation";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rows in one step"), std::string::npos) << e.what();
  }
  // A source whose scratch area cannot hold the settings' largest tree: refused up front.
  DecodeRequest r;
  r.method.method = Method::Dynamic;
  r.sampling.cfg_scale = 2.0;
  auto src = make_eagle_source(*f.head, *f.target, 2, /*scratch=*/8);
  SpecOptions o;
  o.budget = 58;
  try {
    generate_speculative(*f.target, *src, f.cond({1}, true), r, o);
    ADD_FAILURE() << "a too-small scratch area was not detected";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("scratch area"), std::string::npos) << e.what();
  }
}

TEST(BadSettings, RuleCombinationsWithoutMeaningAreClearErrors) {
  auto bad = [](auto mutate, const std::string& expect) {
    MethodSettings m;
    mutate(m);
    try {
      m.validate(32, 64);
      ADD_FAILURE() << "expected: " << expect;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(expect), std::string::npos) << e.what();
    }
  };
  bad([](MethodSettings& m) { m.method = Method::Adt, m.verify = VerifyRule::Maximal; },
      "not to trees");
  bad([](MethodSettings& m) { m.method = Method::Sjd, m.verify = VerifyRule::Deterministic; },
      "Jacobi drafts are samples");
  bad(
      [](MethodSettings& m) {
        m.method = Method::Dynamic, m.verify = VerifyRule::Coupled,
        m.acceptance = Acceptance::Lantern, m.lantern.k = 10;
      },
      "LANTERN relaxes");
  bad(
      [](MethodSettings& m) {
        m.method = Method::PathSpec, m.verify = VerifyRule::Coupled, m.jacobi.path_relax = 0.5;
      },
      "PathRelax raises");
  EXPECT_THROW(verify_rule_from_string("gumbel"), Error);
  // auto: coupled, or sampled where a relaxation needs p / q; greedy has one rule.
  MethodSettings m;
  m.method = Method::Adt;
  SamplingParams sp;
  EXPECT_EQ(resolve_verify(m, sp), VerifyRule::Coupled);
  m.acceptance = Acceptance::Lantern;
  EXPECT_EQ(resolve_verify(m, sp), VerifyRule::Sampled);
  sp.temperature = 0;
  EXPECT_EQ(resolve_verify(m, sp), VerifyRule::Deterministic);
}

// A setting the model's token kind does not read is an error naming its flag, not ignored.
TEST(BadSettings, SettingsOfTheOtherTokenKindAreClearErrors) {
  SamplingParams s;
  EXPECT_NO_THROW(check_token_kind(s, TokenKind::Codes));
  EXPECT_NO_THROW(check_token_kind(s, TokenKind::Vectors));
  s.head_variance = HeadVariance::Fixed;
  EXPECT_NO_THROW(check_token_kind(s, TokenKind::Vectors));
  try {
    check_token_kind(s, TokenKind::Codes);
    ADD_FAILURE() << "head variance on codes";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--head-variance"), std::string::npos) << e.what();
  }
  s = {};
  s.top_k = 40;
  EXPECT_NO_THROW(check_token_kind(s, TokenKind::Codes));
  try {
    check_token_kind(s, TokenKind::Vectors);
    ADD_FAILURE() << "top-k on vectors";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--top-k"), std::string::npos) << e.what();
  }
}

// `--budget auto` during a run: N follows the measured acceptance by rank over the timed costs.
TEST(AdaptiveBudget, FollowsTheMeasuredAcceptance) {
  BudgetChoice timed;
  timed.budget = 8;
  for (int64_t n : {1, 2, 4, 8, 16, 32}) timed.cost_ms.emplace_back(n, 1.0 + 0.02 * double(n));
  auto tree_of = [](int64_t n) {  // a chain: node i's score falls with i, so its rank is i
    DraftTree t;
    t.nodes.push_back(DraftNode{});
    for (int64_t i = 1; i <= n; ++i) t.nodes.push_back(DraftNode{i, i - 1, i, -double(i), 0.5f, 0});
    return t;
  };
  AdaptiveBudget rejects(timed), accepts(timed);
  for (int step = 0; step < 60; ++step) {
    auto t = tree_of(rejects.current());
    rejects.observe(t, AcceptResult{{}, true, 0});  // nothing is ever accepted
    auto u = tree_of(accepts.current());
    AcceptResult all;
    for (int64_t i = 1; i < u.size(); ++i) all.path.push_back(i);
    accepts.observe(u, all);  // every draft accepted
  }
  EXPECT_EQ(rejects.current(), 1);
  EXPECT_EQ(accepts.current(), 32);
}
