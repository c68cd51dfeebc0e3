// The proof that the speculative engine is lossless: greedy token identity with AR for every method
// and draft source, and (in test_sampling_lossless.cpp) the exact distribution under sampling.
#include <gtest/gtest.h>

#include <map>

#include "decode/settings/method_table.h"
#include "decode/tree/tree_builder.h"
#include "spec_fixture.h"
#include "util/error.h"

using namespace adtree;
using namespace adtree::decode;
using adtree::testing::SpecFixture;

namespace {

DecodeRequest request(const std::string& method, double temperature, uint64_t seed) {
  DecodeRequest r;
  r.method.method = adtree::decode::method_from_string(method);
  r.method.dynamic_tree.budget = 20;
  r.method.adt.d_max = 6;
  r.sampling.cfg_scale = 2.0;
  r.sampling.temperature = temperature;
  r.seed = seed;
  return r;
}

DecodeResult run_tree(const SpecFixture& f, DraftSource& src, const model::Condition& c,
                      const DecodeRequest& r) {
  SpecOptions o;
  o.budget = r.method.dynamic_tree.budget;
  return generate_speculative(*f.target, src, c, r, o);
}

}  // namespace

// Identity means something only if drafts were accepted: a loop that rejected every draft would
// match AR too. The random head is right now and then; each method must take some of its drafts.
TEST(GreedyIdentity, EveryMethodWithRandomEagleHeadMatchesAr) {
  SpecFixture f(SpecFixture::micro());
  std::map<std::string, int64_t> accepted;
  for (uint64_t seed : {0, 1, 2}) {
    for (auto words : std::vector<std::vector<int64_t>>{{1, 5}, {3}, {2, 7, 9}}) {
      auto c = f.cond(words, true);
      auto ar = generate_ar(*f.target, c, request("ar", 0, seed).sampling, seed);
      for (const char* m : {"static", "dynamic", "adt"}) {
        auto src = make_eagle_source(*f.head, *f.target, 2);
        auto res = run_tree(f, *src, c, request(m, 0, seed));
        EXPECT_EQ(res.tokens, ar.tokens) << m << " seed " << seed;
        accepted[m] += res.stats.summary.tokens - res.stats.summary.target_forwards;
      }
    }
  }
  for (const char* m : {"static", "dynamic", "adt"}) EXPECT_GT(accepted[m], 0) << m;
}

TEST(GreedyIdentity, OracleDraftAcceptsLongPathsAndStaysIdentical) {
  // The target drafting for itself: at greedy every draft is accepted, so deep paths, long KV
  // compactions and the end-of-image cut-off are all exercised.
  SpecFixture f(SpecFixture::micro());
  auto c = f.cond({4, 2}, true);
  auto ar = generate_ar(*f.target, c, request("ar", 0, 0).sampling, 0);
  for (const char* m : {"static", "dynamic", "adt"}) {
    auto src = make_model_source(*f.target, 2);
    auto res = run_tree(f, *src, c, request(m, 0, 0));
    EXPECT_EQ(res.tokens, ar.tokens) << m;
    EXPECT_GT(res.stats.summary.tau, 3.0) << m << ": an oracle draft should be accepted";
  }
}

TEST(GreedyIdentity, WithoutCfgAndWithTopKToo) {
  SpecFixture f(SpecFixture::micro(), 7);
  auto r = request("dynamic", 0, 3);
  r.sampling.cfg_scale = 1.0;
  r.sampling.top_k = 5;
  auto c = f.cond({6}, false);
  auto ar = generate_ar(*f.target, c, r.sampling, 3);
  for (const char* m : {"static", "dynamic", "adt"}) {
    auto rr = r;
    rr.method.method = adtree::decode::method_from_string(m);
    auto src = make_eagle_source(*f.head, *f.target, 1);
    const auto res = run_tree(f, *src, c, rr);
    EXPECT_EQ(res.tokens, ar.tokens) << m;
    // Some drafts taken (identity with every draft rejected would prove nothing).
    EXPECT_GT(res.stats.summary.tokens, res.stats.summary.target_forwards) << m;
  }
}

TEST(Statistics, GridsFilledAndConsistentForEveryMethod) {
  SpecFixture f(SpecFixture::micro());
  auto c = f.cond({1}, true);
  for (const char* m : {"static", "dynamic", "adt"}) {
    auto src = make_model_source(*f.target, 2);
    int64_t streamed = 0;
    SpecOptions o;
    o.budget = 20;
    auto res =
        generate_speculative(*f.target, *src, c, request(m, 1.0, 5), o, [&](const StepEvent& e) {
          EXPECT_EQ(int64_t(e.tokens.size()), e.record.committed);
          streamed += e.record.committed;
        });
    const auto& s = res.stats;
    ASSERT_TRUE(s.grids.all_filled()) << m;
    EXPECT_EQ(streamed, f.cfg.image_tokens());
    int64_t total = 0, target_tokens = 0;
    for (const auto& st : s.steps) {
      total += st.committed;
      for (int64_t i = 0; i < st.committed; ++i) {
        const auto& cell = s.grids.at(st.first_cell + i);
        EXPECT_EQ(cell.accept_len, st.committed);
        // Depth 0 exactly where the token came from the target: the last token of a step that
        // sampled a bonus (every step but possibly the one that reached the last cell).
        const bool from_target = cell.depth == 0;
        if (from_target) ++target_tokens;
        if (i + 1 < st.committed) {
          EXPECT_GT(cell.depth, 0) << m;
        }
      }
    }
    EXPECT_EQ(total, f.cfg.image_tokens());
    EXPECT_GE(target_tokens, int64_t(s.steps.size()) - 1);
    EXPECT_LE(target_tokens, int64_t(s.steps.size()));
    EXPECT_NEAR(s.summary.tau, double(f.cfg.image_tokens()) / double(s.summary.target_forwards),
                1e-9);
  }
}

TEST(TreeBuilder, StaticPresetsHaveTheDocumentedSizes) {
  auto a = StaticTreeSpec::preset("eagle25"), b = StaticTreeSpec::preset("eagle57");
  EXPECT_EQ(a.paths.size(), 25u);
  EXPECT_EQ(a.depth(), 5);
  EXPECT_EQ(b.paths.size(), 57u);
  EXPECT_EQ(b.depth(), 5);
  EXPECT_THROW(StaticTreeSpec::preset("eagle99"), Error);
  StaticTreeSpec broken{{{0, 1}}};
  EXPECT_THROW(broken.validate(), Error);
}

TEST(TreeBuilder, DynamicTreeKeepsBudgetAndStaysConnected) {
  SpecFixture f(SpecFixture::micro());
  auto c = f.cond({1}, true);
  auto src = make_eagle_source(*f.head, *f.target, 2);
  auto pre_cache = f.target->new_cache(2);
  auto pre = f.target->prefill(pre_cache, c);
  auto feat = pre.hidden.narrow(1, pre.hidden.size(1) - 1, 1);
  src->start(c, feat);
  auto logits = src->begin_step({3}, feat, 0);
  SamplingParams sp;
  LogitsProcessor proc(sp);
  ChildPicker picker;  // deterministic top-k children
  DraftContext ctx{*src, proc, picker, logits, 3, 0, 6};
  auto tree = build_dynamic_tree(ctx, 4, 4, 11);
  src->end_step();
  ASSERT_EQ(tree.size(), 12);
  for (int64_t i = 1; i < tree.size(); ++i) {
    const auto& n = tree.nodes[size_t(i)];
    ASSERT_LT(n.parent, i);
    EXPECT_EQ(n.depth, tree.nodes[size_t(n.parent)].depth + 1);
    EXPECT_LE(n.score, tree.nodes[size_t(n.parent)].score + 1e-12);
  }
  auto mask = tree.ancestor_mask();
  EXPECT_TRUE(mask[5][0].item<bool>());
  EXPECT_FALSE(mask[0][5].item<bool>());
}

TEST(DraftSource, ExpandedTreeRowsEqualTheTargetsPathLogits) {
  // A model source over the target: a node expanded level by level (scratch rows) must see
  // exactly its own root-to-node path.
  SpecFixture f(SpecFixture::micro());
  auto c = f.cond({2}, true);
  auto src = make_model_source(*f.target, 2);
  src->start(c, {});
  src->begin_step({5, 7}, {}, 0);  // tokens 0 and 1 committed; root = token 1 (index 1)
  std::vector<int64_t> rows;
  src->expand({{9, kRootRow, 2}, {4, kRootRow, 2}}, rows);  // two children of the root
  auto deep = src->expand({{11, rows[1], 3}}, rows);        // child of the second
  auto cache = f.target->new_cache(2);
  f.target->prefill(cache, c);
  auto toks = at::tensor(std::vector<int64_t>{5, 7, 4, 11}).unsqueeze(0).repeat({2, 1});
  auto ref = f.target->forward_tokens(cache, toks, 0);
  const float diff = (deep.select(1, 0) - ref.logits.select(1, 3)).abs().max().item<float>();
  EXPECT_LT(diff, 1e-4);
}

TEST(BadSettings, AreClearErrors) {
  SpecFixture f(SpecFixture::micro());
  auto bad = [&](auto mutate, const std::string& expect) {
    MethodSettings m;
    m.method = Method::Dynamic;
    mutate(m);
    try {
      m.validate(f.cfg.vocab_size, f.cfg.image_tokens());
      ADD_FAILURE() << "expected: " << expect;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(expect), std::string::npos) << e.what();
    }
  };
  bad([](MethodSettings& m) { m.dynamic_tree.depth = 0; },
      "dynamic_tree.depth (--depth) must be in 1..64, got 0");
  bad([](MethodSettings& m) { m.dynamic_tree.width = 33; },
      "dynamic_tree.width (--width) must be in 1..32, got 33");
  bad([](MethodSettings& m) { m.dynamic_tree.budget = 1000; }, "larger than the tree can hold");
  bad(
      [](MethodSettings& m) {
        m.acceptance = Acceptance::Lantern, m.lantern.k = 10, m.lantern.delta = -0.1;
      },
      "lantern.delta (--lantern-delta) must be in [0, 1], got -0.1");
  EXPECT_THROW(method_from_string("medusa"), Error);  // names are read at the boundary
  bad([](MethodSettings& m) { m.method = Method::Adt, m.adt.d0 = 9; },
      "ADT d0 must lie in [d_min, d_max]");
  bad([](MethodSettings& m) { m.method = Method::Adt, m.adt.beta = 1.5; },
      "adt.beta (--adt-beta) must be in [0, 1], got 1.5");
}
