// Step traces (decode/stats/trace.h): recording them changes nothing, they describe exactly what
// each step did (tree, accepted path, committed cells, the target distribution), they are
// size-bounded, and they survive a JSON round trip while a corrupt one is rejected with a clear
// error.
#include <gtest/gtest.h>

#include "decode/settings/method_table.h"
#include "decode/stats/stats.h"
#include "decode/tree/adt_policy.h"
#include "spec_fixture.h"
#include "util/error.h"

using namespace adtree;
using namespace adtree::decode;
using adtree::testing::SpecFixture;

namespace {

DecodeRequest request(const std::string& method, double temperature, bool trace) {
  DecodeRequest r;
  r.method.method = adtree::decode::method_from_string(method);
  r.method.dynamic_tree.budget = 20;
  r.method.adt.d_max = 6;
  // The policy's own trees (N fixed): the cost rule's plans are traced in test_adt_planner.cpp.
  r.method.adt.budget_rule = AdtBudget::Fixed;
  r.sampling.cfg_scale = 2.0;
  r.sampling.temperature = temperature;
  r.seed = 3;
  r.trace.enabled = trace;
  r.trace.top_n = 8;
  return r;
}

DecodeResult run(const SpecFixture& f, const std::string& method, double temperature, bool trace,
                 int64_t max_nodes = 256, std::vector<const StepTrace*>* streamed = nullptr) {
  auto r = request(method, temperature, trace);
  r.trace.max_nodes = max_nodes;
  auto c = f.cond({1, 5}, true);
  StepCallback cb;
  if (streamed) {
    cb = [&](const StepEvent& e) { streamed->push_back(e.trace); };
  }
  if (method == "ar") return generate_ar(*f.target, c, r.sampling, r.seed, cb, nullptr, r.trace);
  auto src = make_eagle_source(*f.head, *f.target, 2);
  SpecOptions o;
  o.budget = 20;
  return generate_speculative(*f.target, *src, c, r, o, cb);
}

}  // namespace

TEST(Trace, RecordingChangesNoTokenAndNoStatistic) {
  SpecFixture f(SpecFixture::micro());
  for (const char* m : {"ar", "dynamic", "adt"}) {
    for (double t : {0.0, 1.0}) {
      auto plain = run(f, m, t, false), traced = run(f, m, t, true);
      EXPECT_EQ(plain.tokens, traced.tokens) << m << " T=" << t;
      EXPECT_TRUE(plain.stats.traces.empty());
      ASSERT_EQ(traced.stats.traces.size(), traced.stats.steps.size()) << m;
      EXPECT_EQ(plain.stats.steps.size(), traced.stats.steps.size());
    }
  }
}

TEST(Trace, EachStepDescribesItsTreeAndTheCellsItCommitted) {
  SpecFixture f(SpecFixture::micro());
  for (const char* m : {"static", "dynamic", "adt"}) {
    std::vector<const StepTrace*> streamed;
    auto res = run(f, m, 0.0, true, 256, &streamed);
    ASSERT_EQ(streamed.size(), res.stats.steps.size());
    int64_t cell = 0;
    for (size_t s = 0; s < res.stats.steps.size(); ++s) {
      const auto& rec = res.stats.steps[s];
      const auto& tr = res.stats.traces[s];
      ASSERT_NE(streamed[s], nullptr);
      EXPECT_EQ(tr.step, rec.step);
      ASSERT_EQ(int64_t(tr.cells.size()), rec.committed) << m << " step " << s;
      if (s > 0) {
        EXPECT_EQ(int64_t(tr.nodes.size()), rec.drafted + 1);
        EXPECT_EQ(tr.nodes_dropped, 0);
        EXPECT_EQ(int64_t(tr.path.size()) + (tr.has_bonus ? 1 : 0), rec.committed);
        for (size_t i = 0; i < tr.nodes.size(); ++i) {
          const auto& n = tr.nodes[i];
          if (i == 0) {
            EXPECT_EQ(n.parent, -1);
          } else {
            ASSERT_GE(n.parent, 0);
            ASSERT_LT(n.parent, int64_t(i));  // parents first: one pass draws the tree
            EXPECT_EQ(n.depth, tr.nodes[size_t(n.parent)].depth + 1);
          }
        }
        int64_t parent = 0;
        for (auto id : tr.path) {
          EXPECT_TRUE(tr.nodes[size_t(id)].accepted);
          EXPECT_EQ(tr.nodes[size_t(id)].parent, parent);
          parent = id;
        }
        int accepted = 0;
        for (const auto& n : tr.nodes) accepted += n.accepted ? 1 : 0;
        EXPECT_EQ(accepted, int(tr.path.size()) + 1);  // the path and the root
      }
      for (size_t i = 0; i < tr.cells.size(); ++i) {
        const auto& c = tr.cells[i];
        EXPECT_EQ(c.cell, cell) << m << " step " << s;
        EXPECT_EQ(c.token, res.tokens[size_t(cell)]);
        // Greedy: every committed token is the target's argmax, so rank 0 and the top of the list.
        EXPECT_EQ(c.target_rank, 0);
        ASSERT_EQ(c.top_tokens.size(), 8u);
        EXPECT_EQ(c.top_tokens[0], c.token);
        EXPECT_FLOAT_EQ(c.top1, c.top_probs[0]);
        EXPECT_NEAR(c.top1, res.stats.grids.at(cell).top1, 1e-6);
        for (size_t k = 1; k < c.top_probs.size(); ++k)
          EXPECT_LE(c.top_probs[k], c.top_probs[k - 1]);
        // Drafted cells came from a tree node; its candidates include the committed token.
        if (c.drafted) {
          bool found = false;
          for (auto t : c.cand_tokens) found = found || t == c.token;
          EXPECT_TRUE(found);
        }
        ++cell;
      }
    }
  }
}

TEST(Trace, AdtDecisionMatchesThePolicyRule) {
  SpecFixture f(SpecFixture::micro());
  auto res = run(f, "adt", 1.0, true);
  const auto s = request("adt", 1.0, true).method.adt;
  ASSERT_GT(res.stats.traces.size(), 2u);
  EXPECT_FALSE(res.stats.traces[0].has_adt);  // the prefill builds no tree
  const auto& first = res.stats.traces[1];
  ASSERT_TRUE(first.has_adt);
  EXPECT_EQ(first.adt.origin, "the initial shape (d0, k0)");
  for (size_t i = 1; i < res.stats.traces.size(); ++i) {
    const auto& a = res.stats.traces[i].adt;
    ASSERT_TRUE(res.stats.traces[i].has_adt);
    // (a.d, a.k) is the shape the policy asked for; the statistics hold the tree as built (the
    // budget and the image end may cut levels), and alpha divides by the built levels.
    const int64_t built = res.stats.steps[i].tree_depth;
    EXPECT_LE(built, a.d);
    EXPECT_GE(built, 1);
    EXPECT_EQ(a.accepted, int64_t(res.stats.traces[i].path.size()));
    EXPECT_DOUBLE_EQ(a.alpha, double(a.accepted) / double(built));
    EXPECT_DOUBLE_EQ(a.alpha, res.stats.steps[i].alpha);
    const auto next = AdtPolicy::adapt(s, TreeShape{a.d, a.k}, a.alpha);
    EXPECT_EQ(a.next_d, next.d);
    EXPECT_EQ(a.next_k, next.k);
    EXPECT_EQ(a.rule.rfind(a.alpha >= a.beta ? "alpha >= beta" : "alpha < beta", 0), 0u) << a.rule;
    if (i > 1) {
      EXPECT_FALSE(a.origin.empty());
    }
  }
}

TEST(Trace, NodeBoundKeepsTheAcceptedPathAndAValidTree) {
  SpecFixture f(SpecFixture::micro());
  auto res = run(f, "dynamic", 1.0, true, /*max_nodes=*/4);
  bool dropped = false;
  for (size_t s = 1; s < res.stats.traces.size(); ++s) {
    const auto& tr = res.stats.traces[s];
    EXPECT_EQ(int64_t(tr.nodes.size()) + tr.nodes_dropped, res.stats.steps[s].drafted + 1);
    EXPECT_LE(tr.nodes.size(), 4u + tr.path.size());
    dropped = dropped || tr.nodes_dropped > 0;
    for (size_t i = 1; i < tr.nodes.size(); ++i) ASSERT_LT(tr.nodes[i].parent, int64_t(i));
    for (auto id : tr.path) {
      ASSERT_LT(id, int64_t(tr.nodes.size()));
      EXPECT_TRUE(tr.nodes[size_t(id)].accepted);
    }
  }
  EXPECT_TRUE(dropped);
}

TEST(Trace, SamplingRanksAreThoseOfTheDistribution) {
  SpecFixture f(SpecFixture::micro());
  auto res = run(f, "ar", 1.0, true);
  int not_top = 0;
  for (const auto& tr : res.stats.traces) {
    ASSERT_EQ(tr.cells.size(), 1u);
    const auto& c = tr.cells[0];
    EXPECT_TRUE(tr.nodes.empty());
    EXPECT_EQ(c.target_rank == 0, c.token == c.top_tokens[0]);
    // The committed token sits in the top list at its rank when the rank is inside it.
    if (c.target_rank < int32_t(c.top_tokens.size())) {
      EXPECT_EQ(c.top_tokens[size_t(c.target_rank)], c.token);
    }
    not_top += c.target_rank > 0 ? 1 : 0;
  }
  EXPECT_GT(not_top, 0) << "T = 1 sampling should sometimes commit a token that is not the top-1";
}

TEST(Trace, StatisticsWithTracesRoundTripThroughJson) {
  SpecFixture f(SpecFixture::micro());
  auto res = run(f, "adt", 1.0, true);
  const auto j = res.stats.to_json();
  ASSERT_TRUE(j.contains("traces"));
  const auto back = RunStats::from_json(j);
  EXPECT_EQ(back.to_json(), j);
  EXPECT_EQ(back.traces.size(), res.stats.traces.size());
  EXPECT_FALSE(RunStats::from_json(run(f, "ar", 0.0, false).stats.to_json()).traces.size());
}

TEST(Trace, CorruptStatisticsAreRejectedWithAReason) {
  SpecFixture f(SpecFixture::micro());
  auto j = run(f, "dynamic", 0.0, true).stats.to_json();
  auto expect_error = [](const nlohmann::json& bad, const std::string& words) {
    try {
      RunStats::from_json(bad);
      ADD_FAILURE() << "accepted: " << words;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  auto bad = j;
  bad["format"] = "something-else";
  expect_error(bad, "not an ADT-Tree statistics file");
  bad = j;
  bad["traces"][1]["nodes"]["parent"][1] = 99;
  expect_error(bad, "invalid parent");
  bad = j;
  bad["traces"][1]["path"] = {1000};
  expect_error(bad, "missing node");
  bad = j;
  bad["traces"].erase(bad["traces"].size() - 1);
  expect_error(bad, "trace for some steps only");
  bad = j;
  bad["grids"]["top1"][0] = 5;
  expect_error(bad, "does not match its size");
  bad = j;
  bad["steps"][0].erase("committed");
  expect_error(bad, "invalid statistics");
  bad = j;
  bad["traces"][1]["cells"][0]["top_probs"] = nlohmann::json::array();
  expect_error(bad, "differ in length");
  bad = j;
  bad["grids"]["origin"][0][0] = 7;
  expect_error(bad, "unknown value");
  bad = j;
  bad["steps"][1]["accepted"]["head"] = 99;
  expect_error(bad, "more drafts than it commits");
}

// A statistics file from before the drafted-by and planned-shape grids reads as zeros there, the
// rest unchanged.
TEST(Trace, StatisticsFromBeforeTheOriginGridsStillRead) {
  SpecFixture f(SpecFixture::micro());
  auto j = run(f, "dynamic", 0.0, false).stats.to_json();
  for (const char* key : {"plan_depth", "plan_width", "origin"}) j["grids"].erase(key);
  for (auto& st : j["steps"]) st.erase("accepted"), st.erase("plan");
  j["summary"].erase("accepted");
  const auto back = RunStats::from_json(j);
  EXPECT_EQ(back.grids.at(1).origin, TokenOrigin::Target);
  EXPECT_EQ(back.grids.at(1).plan_depth, 0);
  EXPECT_EQ(back.summary.accepted_head, 0);
  EXPECT_EQ(back.grids.at(1).depth,
            RunStats::from_json(run(f, "dynamic", 0.0, false).stats.to_json()).grids.at(1).depth);
}
