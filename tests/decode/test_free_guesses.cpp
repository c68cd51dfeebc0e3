// Free candidates of cost-aware ADT-Tree (free_guesses.h, SPEC_DECODING.md 5.8): the codes above
// and to the left of the next cells and the target's guesses, hung below the root and the draft
// head's rank-0 path, picked best first; and the loop that verifies such mixed trees, token for
// token AR's.
#include <gtest/gtest.h>

#include <numeric>

#include "decode/tree/adt_planner.h"
#include "decode/tree/free_guesses.h"
#include "decode/tree/tree_builder.h"
#include "spec_fixture.h"
#include "util/error.h"

using namespace adtree;
using namespace adtree::decode;
using adtree::testing::SpecFixture;
using adtree::testing::striped_codes;

namespace {
// Every row holds one code (its row number): each cell repeats the one to its left, none the one
// above.
std::vector<int64_t> banded(int64_t cells, int64_t w) {
  std::vector<int64_t> t;
  for (int64_t c = 0; c < cells; ++c) t.push_back(c / w);
  return t;
}
}  // namespace

TEST(FreeGuesses, TheCodeToTheLeftWhereTheCellsRepeatSideways) {
  const int64_t w = 8;
  const auto tok = banded(3 * w + 2, w);  // the next cell, 26, is in row 3, after two 3s
  FreeGuesses f(8, w, nullptr);
  f.learn(tok, 0, int64_t(tok.size()));
  const auto next = f.candidates(tok, int64_t(tok.size()), int64_t(tok.size()), tok.back());
  ASSERT_EQ(next.size(), 2u);
  EXPECT_EQ(next[0].token, 2);  // the code above comes first, and is learned to miss
  EXPECT_LT(next[0].p, 0.1);
  EXPECT_EQ(next[1].token, 3);  // then the code to the left, learned to hit
  EXPECT_GT(next[1].p, 0.85);
  // Not across a row's end, not twice the same code, not with the left codes off.
  EXPECT_EQ(f.candidates(tok, 24, 24, 2).size(), 1u);
  EXPECT_EQ(f.candidates(tok, 26, 26, 2).size(), 1u);
  EXPECT_EQ(FreeGuesses(8, w, nullptr, false).candidates(tok, 26, 26, 3).size(), 1u);
  // A chain of left codes from the root, best first, no deeper than asked.
  const auto picked = f.pick(tok, {FreeAnchor{0, 0, tok.back(), 1.0, {}}}, 10, 4);
  ASSERT_EQ(picked.size(), 10u);
  for (size_t i = 1; i < picked.size(); ++i) EXPECT_LE(picked[i].reach, picked[i - 1].reach);
  int64_t deepest = 0;
  for (const auto& p : picked) deepest = std::max(deepest, p.depth);
  EXPECT_EQ(deepest, 4);
  DraftTree t = root_only_tree(tok.back());
  add_free_nodes(t, picked);
  for (int64_t j = 1; j <= 4; ++j) {  // the most likely path: 3, 3, 3, 3
    EXPECT_EQ(t.nodes[size_t(j)].token, 3);
    EXPECT_EQ(t.nodes[size_t(j)].parent, j - 1);
    EXPECT_TRUE(t.nodes[size_t(j)].grid);
  }
}

// A drafted tree: root -> A (rank 0) -> B (rank 0), and a rank-1 sibling of A. Free candidates
// hang below the root, A and B, never below the sibling, and never copy a drafted child.
TEST(FreeGuesses, HangBelowTheHeadsRankZeroPathAndCopyNoDraft) {
  const int64_t w = 8;
  const auto tok = striped_codes(3 * w + 2, w);
  const auto flat = flat_step_costs();
  AdtPlanner p(flat, 8, w, 4, 4, 16, true);
  p.observe(root_only_tree(tok[0]), AcceptResult{}, tok, 1);
  const int64_t first = int64_t(tok.size());
  const int64_t above = tok[size_t(first - w)];  // the free candidate for the first cell
  DraftTree t = root_only_tree(tok.back());
  t.nodes.push_back(DraftNode{40, 0, 1, -0.1, 0.6f, 0});     // A
  t.nodes.push_back(DraftNode{above, 0, 1, -2.0, 0.1f, 1});  // A's sibling: the code above
  t.nodes.push_back(DraftNode{41, 1, 2, -0.3, 0.6f, 0});     // B
  t.child_dist.resize(4);
  t.levels = 2;
  StepPlan plan;
  plan.grid = 40, plan.grid_depth = 4;  // more than there are: all of them
  EXPECT_GT(p.add_free(t, tok, plan), 5);
  int64_t below_root = 0, below_a = 0, below_b = 0;
  for (int64_t i = 4; i < t.size(); ++i) {
    const auto& nd = t.nodes[size_t(i)];
    EXPECT_TRUE(nd.grid);
    EXPECT_NE(nd.parent, 2) << "below the rank-1 sibling";
    EXPECT_LE(nd.depth, 4);
    EXPECT_EQ(nd.depth, t.nodes[size_t(nd.parent)].depth + 1);
    EXPECT_LT(nd.score, t.nodes[size_t(nd.parent)].score);
    below_root += nd.parent == 0;
    below_a += nd.parent == 1;
    below_b += nd.parent == 3;
    if (nd.parent == 0) {
      EXPECT_NE(nd.token, above) << "a copy of a drafted child";
    }
  }
  EXPECT_GT(below_a, 0);
  EXPECT_GT(below_b, 0);
  // Below A (cell first + 1) the code above that cell; below B the one above cell first + 2.
  for (int64_t i = 4; i < t.size(); ++i) {
    const auto& nd = t.nodes[size_t(i)];
    if (nd.parent == 3 && nd.rank == 0) {
      EXPECT_EQ(nd.token, tok[size_t(first + 2 - w)]);
    }
  }
  EXPECT_EQ(below_root, 1) << "the left code alone (the code above is drafted)";
  // With the tree option off: one chain below the root, codes above only.
  AdtPlanner chain(flat, 8, w, 4, 4, 16, true, nullptr, 0.0, false);
  chain.observe(root_only_tree(tok[0]), AcceptResult{}, tok, 1);
  DraftTree u = root_only_tree(tok.back());
  u.nodes.push_back(DraftNode{40, 0, 1, -0.1, 0.6f, 0});
  u.child_dist.resize(2);
  u.levels = 1;
  chain.add_free(u, tok, plan);
  for (int64_t i = 2; i < u.size(); ++i) {
    EXPECT_NE(u.nodes[size_t(i)].parent, 1);
    EXPECT_EQ(u.nodes[size_t(i)].token, tok[size_t(first + i - 2 - w)]);
  }
}

TEST(FreeGuesses, APlanCountsTheCandidatesInsideTheHeadsTree) {
  const int64_t w = 8;
  std::vector<int64_t> tok(3 * w + 2);  // no code repeats: the free candidates at their priors
  std::iota(tok.begin(), tok.end(), 0);
  // Blocks cheap, a head level a tenth of a step: head trees pay, and so do free candidates.
  const auto costs = [] {
    StepCosts c;
    c.verify_ms = {{1, 1.0}, {16, 1.3}, {64, 3.0}};
    c.head_ms = {{1, 0.1}, {64, 0.2}};
    return c;
  }();
  AdtPlanner tree(costs, 8, w, 4, 4, 16, true),
      chain(costs, 8, w, 4, 4, 16, true, nullptr, 0.0, false);
  const auto a = tree.plan(tok, TreeShape{4, 2}, 1, 100),
             b = chain.plan(tok, TreeShape{4, 2}, 1, 100);
  EXPECT_GT(a.d, 0);
  EXPECT_GT(a.grid, b.grid);
  EXPECT_GT((a.tokens + a.leftover) / a.ms, (b.tokens + b.leftover) / b.ms);
  EXPECT_EQ(a.grid_depth, 4);
}

TEST(FreeGuesses, AFreeNodeNeedsItsCode) {
  DraftTree t = root_only_tree(1);
  EXPECT_THROW(add_free_nodes(t, {FreeNode{0, -1, 1, -1, 0.5}}), Error);
}

// Mixed trees in the loop: on a flat curve every step takes head drafts and free candidates below
// them; some are accepted below a head draft, and the tokens are AR's, greedy and coupled.
TEST(FreeGuesses, MixedTreesAreTokenIdenticalToAr) {
  auto cfg = SpecFixture::micro();
  cfg.grid_h = cfg.grid_w = 8;
  SpecFixture f(cfg);
  const auto flat = flat_step_costs();
  auto c = f.cond({1, 5}, true);
  int64_t mixed_paths = 0;
  for (double temperature : {0.0, 1.0}) {
    for (uint64_t seed : {2u, 7u}) {
      DecodeRequest r;
      r.method.method = Method::Adt;
      r.method.verify = VerifyRule::Coupled;
      r.sampling.cfg_scale = 2.0;
      r.sampling.temperature = temperature;
      r.seed = seed;
      r.trace.enabled = true;
      auto src = make_model_source(*f.target, 2);
      SpecOptions o;
      o.budget = 16;
      o.costs = &flat;
      const auto res = generate_speculative(*f.target, *src, c, r, o);
      EXPECT_EQ(res.tokens, generate_ar(*f.target, c, r.sampling, r.seed).tokens)
          << "T = " << temperature << ", seed " << seed;
      for (const auto& tr : res.stats.traces) {
        for (const auto& nd : tr.nodes) {
          if (!nd.guess || !nd.accepted || nd.parent <= 0) continue;
          mixed_paths += !tr.nodes[size_t(nd.parent)].guess;
        }
      }
    }
  }
  EXPECT_GT(mixed_paths, 0) << "no free candidate was accepted below a head draft";
}
