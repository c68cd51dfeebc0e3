// Cost-aware ADT-Tree (SPEC_DECODING.md 5.8): the step cost curve, the planner's choices under a
// CPU-like and a flat curve, the free grid candidates, and the loop that runs its plans: AR-sized
// steps whose head inputs wait, token-identical to AR.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "decode/settings/method_table.h"
#include "decode/tree/adt_planner.h"
#include "decode/tree/step_cost.h"
#include "decode/tree/tree_builder.h"
#include "spec_fixture.h"
#include "util/error.h"

using namespace adtree;
using namespace adtree::decode;
using adtree::testing::SpecFixture;
using adtree::testing::striped_codes;

namespace {
StepCosts curve(std::vector<std::pair<int64_t, double>> verify,
                std::vector<std::pair<int64_t, double>> head) {
  StepCosts c;
  c.verify_ms = std::move(verify);
  c.head_ms = std::move(head);
  return c;
}
// Verifying q rows costs q steps (a CPU whose blocks are arithmetic-bound), a head call half one.
StepCosts steep() {
  return curve({{1, 1.0}, {64, 64.0}}, {{1, 0.5}, {64, 32.0}});
}

std::string error_of(const nlohmann::json& j) {
  try {
    StepCosts::from_json(j, "test curve");
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

}  // namespace

TEST(StepCosts, InterpolatesBetweenAndBeyondTheMeasuredRows) {
  const auto c = curve({{1, 1.0}, {4, 2.5}, {8, 4.5}}, {{1, 0.2}, {8, 0.9}});
  EXPECT_DOUBLE_EQ(c.verify(1), 1.0);
  EXPECT_DOUBLE_EQ(c.verify(2), 1.5);
  EXPECT_DOUBLE_EQ(c.verify(6), 3.5);
  EXPECT_DOUBLE_EQ(c.verify(12), 6.5);  // the last segment's slope, continued
  EXPECT_DOUBLE_EQ(c.head(1), 0.2);
  const auto back = StepCosts::from_json(c.to_json(), "round trip");
  EXPECT_EQ(back.verify_ms, c.verify_ms);
  EXPECT_EQ(back.head_ms, c.head_ms);
}

TEST(StepCosts, BadCurvesAreClearErrors) {
  const nlohmann::json ok = {{"verify_ms", {{1, 1.0}, {2, 1.2}}}, {"head_ms", {{1, 0.1}}}};
  EXPECT_EQ(error_of(ok), "");
  auto with = [&](const char* key, nlohmann::json v) {
    auto j = ok;
    j[key] = v;
    return error_of(j);
  };
  EXPECT_NE(with("verify_ms", nlohmann::json::array()).find("non-empty"), std::string::npos);
  EXPECT_NE(with("verify_ms", {{2, 1.0}, {1, 1.2}}).find("ascending"), std::string::npos);
  EXPECT_NE(with("head_ms", {{1, -0.1}}).find("ms > 0"), std::string::npos);
  EXPECT_NE(with("head_ms", {{0, 0.1}}).find("rows >= 1"), std::string::npos);
  EXPECT_NE(with("head_ms", {{1, "fast"}}).find("[rows, ms]"), std::string::npos);
  EXPECT_NE(error_of(nlohmann::json::array()).find("JSON object"), std::string::npos);
  auto j = ok;
  j.erase("head_ms");
  EXPECT_NE(error_of(j).find("head_ms"), std::string::npos);

  const auto dir = std::filesystem::temp_directory_path() / "adtree-test-cost-curve";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "broken.json") << "{\"verify_ms\": [[1, 1.0]";
  EXPECT_THROW(load_step_costs((dir / "broken.json").string()), Error);
  EXPECT_THROW(load_step_costs((dir / "missing.json").string()), Error);
  std::filesystem::remove_all(dir);
}

TEST(StepCosts, DraftsCanPayOnlyWhereABlockIsCheaperPerRowThanAStep) {
  EXPECT_FALSE(drafts_can_pay(steep(), 64));  // a block of q rows costs q steps
  EXPECT_FALSE(drafts_can_pay(curve({{1, 1.0}, {2, 2.5}, {8, 9.0}}, {{1, 0.1}}), 64));
  const auto dip = curve({{1, 1.0}, {2, 2.0}, {6, 5.0}, {8, 9.0}}, {{1, 0.1}});
  EXPECT_TRUE(drafts_can_pay(dip, 64));  // 6 rows for 5 steps
  EXPECT_FALSE(drafts_can_pay(dip, 2));  // ... beyond the largest block a step may verify
  EXPECT_TRUE(drafts_can_pay(flat_step_costs(), 2));
}

TEST(AdtPlanner, NoTreePaysOnASteepCurveSoTheStepIsArSized) {
  AdtPlanner p(steep(), 16, 16, 8, 10, 58, true);
  const auto plan = p.plan(std::vector<int64_t>(40, 3), TreeShape{4, 6}, 1, 200);
  EXPECT_EQ(plan.d, 0);
  EXPECT_EQ(plan.grid, 0);
  EXPECT_DOUBLE_EQ(plan.tokens, 1.0);
  EXPECT_NE(describe(plan).find("AR-sized"), std::string::npos);
}

TEST(AdtPlanner, AFlatCurveBuysTheBiggerTree) {
  AdtPlanner cpu(
      curve({{1, 1.0}, {2, 1.1}, {4, 1.5}, {8, 2.6}, {64, 17.0}}, {{1, 0.12}, {10, 0.4}}), 16, 16,
      8, 10, 58, false);
  AdtPlanner gpu(flat_step_costs(), 16, 16, 8, 10, 58, false);
  const std::vector<int64_t> tok(40, 3);
  const auto a = cpu.plan(tok, TreeShape{8, 10}, 1, 200),
             b = gpu.plan(tok, TreeShape{8, 10}, 1, 200);
  EXPECT_GT(a.d, 0);  // a small tree pays on this CPU-like curve
  EXPECT_GT(b.n, a.n);
  EXPECT_GT(b.tokens, a.tokens);
  // The adjacency shape bounds the plan.
  const auto c = gpu.plan(tok, TreeShape{2, 3}, 1, 200);
  EXPECT_LE(c.d, 2);
  EXPECT_LE(c.k, 3);
  // ... and so does the end of the image.
  EXPECT_LE(gpu.plan(tok, TreeShape{8, 10}, 1, 1).d, 1);
}

// A head that drafts every level in its first call (the parallel head) pays for one call whatever
// the depth: on the same curve its plans go deeper than a head that pays each level.
TEST(AdtPlanner, AOneCallHeadPaysForNoLevelAfterTheFirst) {
  auto levels = curve({{1, 1.0}, {2, 1.05}, {4, 1.2}, {8, 1.6}, {64, 12.0}}, {{1, 0.3}, {10, 0.5}});
  auto one = levels;
  one.one_call = true;
  const std::vector<int64_t> tok(40, 3);
  const auto a = AdtPlanner(levels, 16, 16, 8, 10, 58, false).plan(tok, TreeShape{8, 10}, 1, 200);
  const auto b = AdtPlanner(one, 16, 16, 8, 10, 58, false).plan(tok, TreeShape{8, 10}, 1, 200);
  EXPECT_GT(b.d, a.d);
  EXPECT_NEAR(b.ms, one.verify(1 + b.n) + one.head(1), 1e-9);
  const auto back = StepCosts::from_json(one.to_json(), "round trip");
  EXPECT_TRUE(back.one_call);
}

TEST(AdtPlanner, LearnsTheHeadsAcceptanceFromVerifiedTrees) {
  AdtPlanner p(flat_step_costs(), 4, 4, 4, 4, 16, false);
  const double before = p.head_level(1, 1, 1.0);
  // Trees whose rank-0 child is always the target's token, at level 1 and 2.
  std::vector<int64_t> tok{5};
  for (int i = 0; i < 4; ++i) {
    DraftTree t = root_only_tree(tok.back());
    t.nodes.push_back(DraftNode{7, 0, 1, -0.1, 0.9f, 0});
    t.nodes.push_back(DraftNode{8, 0, 1, -2.0, 0.1f, 1});
    t.nodes.push_back(DraftNode{9, 1, 2, -0.2, 0.9f, 0});
    t.child_dist.resize(4);
    AcceptResult acc;
    acc.path = {1, 3};
    acc.has_bonus = true, acc.bonus = 2;
    const int64_t first = int64_t(tok.size());
    tok.insert(tok.end(), {7, 9, 2});
    p.observe(t, acc, tok, first);
  }
  EXPECT_GT(p.head_level(1, 1, 1.0), before + 0.2);
  EXPECT_GT(p.head_level(2, 1, 1.0), p.head_level(3, 1, 1.0));  // level 3 was never tried
  // The rank-1 child always missed: width 2 adds little over width 1.
  EXPECT_LT(p.head_level(1, 2, 1.0) - p.head_level(1, 1, 1.0), 0.06);
  // Cells 1 and 5 (rank-0 hits) are neighbours of cell 6: the head is trusted more there.
  EXPECT_GT(p.local_factor(6), 1.0);
}

TEST(AdtPlanner, GridCandidatesWhereTheCodesRepeatAndOnlyWhereTheRuleAllows) {
  const int64_t w = 8;
  const auto tok = striped_codes(5 * w + 3, w);
  const auto cpu = curve({{1, 1.0}, {4, 1.2}, {8, 1.6}, {16, 2.6}}, {{1, 0.3}, {8, 0.9}});
  AdtPlanner with(cpu, 8, w, 8, 10, 58, true), without(cpu, 8, w, 8, 10, 58, false);
  // Learn from the committed picture: every cell repeated its upper code.
  with.observe(root_only_tree(tok[0]), AcceptResult{}, tok, 1);
  const auto next =
      with.free_guesses().candidates(tok, int64_t(tok.size()), int64_t(tok.size()), tok.back());
  ASSERT_FALSE(next.empty());
  EXPECT_EQ(next[0].token, tok[tok.size() - size_t(w)]);
  EXPECT_GT(next[0].p, 0.9);
  const auto g = with.plan(tok, TreeShape{4, 4}, 1, 100);
  EXPECT_GT(g.grid, 2);
  EXPECT_EQ(without.plan(tok, TreeShape{4, 4}, 1, 100).grid, 0);
  // The chain's codes are the cells above the next ones, one below the other.
  DraftTree t = root_only_tree(tok.back());
  ASSERT_EQ(with.add_free(t, tok, g), g.grid);
  for (int64_t j = 1; j <= 3; ++j) {
    const auto& nd = t.nodes[size_t(j)];
    EXPECT_TRUE(nd.grid);
    EXPECT_EQ(nd.parent, j - 1);
    EXPECT_EQ(nd.token, tok[tok.size() + size_t(j - 1) - w]);
  }
}

// The loop under plans that skip the head: a curve on which feeding exactly three waiting rows is
// dear (and every other count cheap) makes each step after a fully accepted two-level tree an
// AR-sized one, whose rows wait and go in with the next tree's. The draft model is the target
// itself (an oracle), so every head tree is accepted whole if and only if the waiting rows were
// fed right; and every token equals AR's.
TEST(AdtPlanner, ArSizedStepsFeedTheHeadLaterAndStayTokenIdentical) {
  auto cfg = SpecFixture::micro();
  cfg.grid_h = cfg.grid_w = 8;  // 64 tokens: room for many steps of each kind
  SpecFixture f(cfg);
  const auto costs = curve({{1, 1.0}, {2, 1.2}, {3, 1.3}, {4, 100.0}},
                           {{1, 0.05}, {2, 0.05}, {3, 10.0}, {4, 0.05}, {64, 0.05}});
  for (double temperature : {0.0, 1.0}) {
    DecodeRequest r;
    r.method.method = Method::Adt;
    r.method.adt.grid = false;
    r.method.verify = VerifyRule::Coupled;
    r.sampling.cfg_scale = 2.0;
    r.sampling.temperature = temperature;
    r.seed = 3;
    auto c = f.cond({1, 5}, true);
    auto ar = generate_ar(*f.target, c, r.sampling, r.seed);
    auto src = make_model_source(*f.target, 2);
    SpecOptions o;
    o.budget = 16;
    o.costs = &costs;
    auto res = generate_speculative(*f.target, *src, c, r, o);
    EXPECT_EQ(res.tokens, ar.tokens) << "T = " << temperature;
    int64_t skipped = 0, trees = 0, whole = 0;
    for (const auto& s : res.stats.steps) {
      if (s.cum_tokens == cfg.image_tokens()) continue;  // the last step has no bonus
      if (s.drafted == 0) {
        ++skipped;
      } else {
        ++trees;
        whole += s.committed == s.tree_depth + 1;
      }
    }
    EXPECT_GT(skipped, 5) << "T = " << temperature;
    EXPECT_GT(trees, 5) << "T = " << temperature;
    EXPECT_EQ(whole, trees) << "T = " << temperature << ": the oracle missed after waiting rows";
  }
}

// Every accepted draft is counted once, by where it came from (the bench's head share and the
// studio's "Drafted by" map read these): the head's drafts and the free guesses of cost-aware
// ADT-Tree, only guesses for SJD (no draft model). The planned shape is the policy's, within its
// bounds, and the tree that ran is the one verified.
TEST(AdtPlanner, AcceptedDraftsAreCountedByOrigin) {
  auto cfg = SpecFixture::micro();
  cfg.grid_h = cfg.grid_w = 8;
  SpecFixture f(cfg);
  const auto flat = flat_step_costs();
  auto c = f.cond({1, 5}, true);
  for (const std::string method : {"adt", "sjd"}) {
    DecodeRequest r;
    r.method.method = method_from_string(method);
    r.method.verify = VerifyRule::Coupled;
    r.sampling.cfg_scale = 2.0;
    r.sampling.temperature = 1.0;
    r.seed = 5;
    r.trace.enabled = true;
    auto src = make_model_source(*f.target, 2);
    SpecOptions o;
    o.budget = 16;
    o.costs = &flat;
    const auto res = method == "sjd" ? generate_jacobi(*f.target, c, r, o)
                                     : generate_speculative(*f.target, *src, c, r, o);
    int64_t head = 0, guess = 0, drafted_cells = 0;
    // The traces tell the same: their guess nodes are the step's grid candidates (every drafted
    // node for SJD).
    ASSERT_EQ(res.stats.traces.size(), res.stats.steps.size());
    for (size_t i = 1; i < res.stats.steps.size(); ++i) {
      const auto& nodes = res.stats.traces[i].nodes;
      const auto guesses =
          std::count_if(nodes.begin(), nodes.end(), [](const TraceNode& n) { return n.guess; });
      const auto& st = res.stats.steps[i];
      EXPECT_EQ(guesses, method == "sjd" ? st.drafted : st.grid) << method << " step " << i;
    }
    for (const auto& s : res.stats.steps) {
      head += s.accepted_head, guess += s.accepted_guess;
      EXPECT_LE(s.accepted_head + s.accepted_guess, s.committed);
      EXPECT_LE(s.tree_depth, s.drafted);
      if (method == "adt" && s.drafted > 0) {
        EXPECT_GE(s.plan_depth, r.method.adt.d_min);
        EXPECT_LE(s.plan_depth, r.method.adt.d_max);
      }
      if (method == "sjd" && s.drafted > 0) {  // a window is its own plan
        EXPECT_EQ(s.plan_depth, s.tree_depth);
        EXPECT_EQ(s.plan_width, s.tree_width);
      }
    }
    for (int64_t cell = 0; cell < cfg.image_tokens(); ++cell) {
      const auto& cs = res.stats.grids.at(cell);
      drafted_cells += cs.depth > 0;
      EXPECT_EQ(cs.origin == TokenOrigin::Target, cs.depth == 0) << method << " cell " << cell;
      if (method == "sjd") {
        EXPECT_NE(cs.origin, TokenOrigin::Head);
      }
    }
    EXPECT_EQ(head + guess, drafted_cells) << method;
    EXPECT_EQ(res.stats.summary.accepted_head, head);
    EXPECT_EQ(res.stats.summary.accepted_guess, guess);
    EXPECT_GT(drafted_cells, 0) << method;
    if (method == "sjd") {
      EXPECT_EQ(head, 0);
    } else {
      EXPECT_GT(head, 0) << "a flat curve plans head trees";
    }
    // The statistics file keeps them.
    const auto back = RunStats::from_json(res.stats.to_json());
    EXPECT_EQ(back.summary.accepted_head, head);
    EXPECT_EQ(back.steps.back().plan_depth, res.stats.steps.back().plan_depth);
    EXPECT_EQ(back.grids.at(cfg.image_tokens() - 1).origin,
              res.stats.grids.at(cfg.image_tokens() - 1).origin);
  }
}

// The target's rows of rejected nodes guess the cells after the bonus (coupled choices, as SJD's
// guesses): the next step's free chain offers them before any code above.
TEST(AdtPlanner, RejectedRowsLeaveGuessesForTheNextChain) {
  const int64_t w = 4, V = 6;
  CouplingNoise noise(9, V);
  AdtPlanner p(flat_step_costs(), 4, w, 4, 4, 16, true, &noise);
  std::vector<int64_t> tok{1, 2, 3, 4, 5};  // root at cell 4; the tree drafts cells 5 and 6
  DraftTree t = root_only_tree(tok.back());
  t.nodes.push_back(DraftNode{0, 0, 1, -0.1, 0.9f, 0});  // rejected at cell 5
  t.nodes.push_back(DraftNode{3, 1, 2, -0.2, 0.9f, 0});  // below it, predicts cell 7
  t.child_dist.resize(3);
  t.levels = 2;
  // Rows: node 1 (cell 6) puts all mass on code 2, node 2 (cell 7) on code 4.
  auto probs = at::zeros({3, V});
  probs[0][1] = 1.0, probs[1][2] = 1.0, probs[2][4] = 1.0;
  AcceptResult acc;
  acc.has_bonus = true, acc.bonus = 1;  // cell 5 takes 1: the draft 0 was rejected
  tok.push_back(1);
  p.observe(t, acc, tok, 5, probs);
  const auto& f = p.free_guesses();
  const int64_t first = int64_t(tok.size());
  EXPECT_EQ(f.candidates(tok, first, 6, tok.back()).at(0).token, 2);  // cell 6: node 1's guess
  EXPECT_EQ(f.candidates(tok, first, 7, 2).at(0).token, 4);           // cell 7: node 2's guess
  EXPECT_EQ(f.candidates(tok, first, 8, 4).at(0).token, tok[8 - w]);  // cell 8: the code above
  // The guesses chain below each other, best first.
  DraftTree chain = root_only_tree(tok.back());
  StepPlan three;
  three.grid = 3, three.grid_depth = 3;
  p.add_free(chain, tok, three);
  ASSERT_EQ(chain.size(), 4);
  EXPECT_EQ(chain.nodes[1].token, 2);
  EXPECT_EQ(chain.nodes[2].token, 4);
  EXPECT_EQ(chain.nodes[2].parent, 1);
}

TEST(AdtPlanner, GuessesLeftForTheNextStepLengthenTheChain) {
  // Guesses for cells 6, 7 and 8 (rows of a rejected chain, as above); a curve on which the head
  // never pays. One step alone: a one-cell chain is best (1.5 tokens in 1.2 ms against 1.75 in
  // 1.5); with each cell verified but not committed worth 0.5, two cells are.
  const int64_t w = 4, V = 6;
  CouplingNoise noise(9, V);
  const auto c = curve({{1, 1.0}, {2, 1.2}, {3, 1.5}, {4, 1.9}}, {{1, 10.0}, {8, 20.0}});
  AdtPlanner one(c, 4, w, 4, 4, 16, true, &noise, 0.0), two(c, 4, w, 4, 4, 16, true, &noise, 0.5);
  std::vector<int64_t> tok{1, 2, 3, 4, 5};
  DraftTree t = root_only_tree(tok.back());
  t.nodes.push_back(DraftNode{0, 0, 1, -0.1, 0.9f, 0});
  t.nodes.push_back(DraftNode{3, 1, 2, -0.2, 0.9f, 0});
  t.nodes.push_back(DraftNode{3, 2, 3, -0.3, 0.9f, 0});
  t.child_dist.resize(4);
  t.levels = 3;
  auto probs = at::zeros({4, V});
  probs[0][1] = 1.0, probs[1][2] = 1.0, probs[2][4] = 1.0, probs[3][5] = 1.0;
  AcceptResult acc;
  acc.has_bonus = true, acc.bonus = 1;
  tok.push_back(1);
  one.observe(t, acc, tok, 5, probs);
  two.observe(t, acc, tok, 5, probs);
  const auto a = one.plan(tok, TreeShape{3, 4}, 1, 100), b = two.plan(tok, TreeShape{3, 4}, 1, 100);
  EXPECT_EQ(a.d, 0);
  EXPECT_EQ(a.grid, 1);
  EXPECT_DOUBLE_EQ(a.leftover, 0.0);
  EXPECT_EQ(b.grid, 2);
  EXPECT_NEAR(b.tokens, 1.75, 1e-9);          // guesses hit at their prior, 0.5
  EXPECT_NEAR(b.leftover, 0.5 * 1.25, 1e-9);  // 2 cells verified, 0.75 expected committed
  EXPECT_NE(describe(b).find("guesses left"), std::string::npos);
}
