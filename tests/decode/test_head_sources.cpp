// The draft sources of the heads that predict the guided distribution: the parallel head
// (decode/tree/parallel_source.h) and an EAGLE head on the conditional stream alone (output
// "mixed"). Every tree method drafted by either commits AR's tokens, greedy and coupled, and takes
// some of its drafts; the parallel head builds no level deeper than its depths.
#include <gtest/gtest.h>

#include "decode/settings/method_table.h"
#include "decode/tree/parallel_source.h"
#include "spec_fixture.h"

using namespace adtree;
using namespace adtree::decode;
using adtree::testing::scaled_params;
using adtree::testing::SpecFixture;

namespace {

DecodeRequest request(const std::string& method, VerifyRule rule, double temperature,
                      uint64_t seed) {
  DecodeRequest r;
  r.method.method = method_from_string(method);
  r.method.verify = rule;
  r.method.head = DraftHead::Parallel;
  r.method.dynamic_tree.depth = 7;  // 8 levels asked for: the head drafts 3
  r.method.dynamic_tree.budget = 20;
  r.method.adt.d_max = 8;
  r.sampling.cfg_scale = 2.0;
  r.sampling.temperature = temperature;
  r.seed = seed;
  return r;
}

}  // namespace

TEST(ParallelSource, EveryTreeMethodCommitsArsTokensGreedyAndCoupled) {
  SpecFixture f(SpecFixture::micro());
  const model::ParallelHead head(
      *f.target, scaled_params(model::parallel_head_param_specs(f.cfg, 3), 7, 0.3), 3);
  int64_t accepted = 0;
  for (uint64_t seed : {0, 1, 2}) {
    for (double t : {0.0, 1.0}) {
      auto c = f.cond({1, 5}, true);
      const auto rule = t == 0 ? VerifyRule::Auto : VerifyRule::Coupled;
      auto base = request("ar", rule, t, seed);
      auto ar = generate_ar(*f.target, c, base.sampling, seed);
      for (const char* m : {"static", "dynamic", "adt"}) {
        auto src = make_parallel_source(head, *f.target, 2);
        EXPECT_EQ(src->max_depth(), 3);
        SpecOptions o;
        o.budget = 20;
        // The source refuses a level past its depths: a tree that went deeper would throw here.
        auto res = generate_speculative(*f.target, *src, c, request(m, rule, t, seed), o);
        EXPECT_EQ(res.tokens, ar.tokens) << m << " T " << t << " seed " << seed;
        accepted += res.stats.summary.tokens - res.stats.summary.target_forwards;
      }
    }
  }
  EXPECT_GT(accepted, 0);
}

TEST(CondStreamSource, AnEagleHeadOnTheConditionalStreamCommitsArsTokens) {
  SpecFixture f(SpecFixture::micro());
  int64_t accepted = 0;
  for (uint64_t seed : {0, 1}) {
    for (double t : {0.0, 1.0}) {
      auto c = f.cond({2, 7}, true);
      const auto rule = t == 0 ? VerifyRule::Auto : VerifyRule::Coupled;
      auto ar = generate_ar(*f.target, c, request("ar", rule, t, seed).sampling, seed);
      for (const char* m : {"static", "dynamic", "adt"}) {
        auto src = make_eagle_source(*f.head, *f.target, 2, kDefaultScratchRows, /*mixed=*/true);
        auto r = request(m, rule, t, seed);
        r.method.head = DraftHead::Eagle;
        SpecOptions o;
        o.budget = 20;
        auto res = generate_speculative(*f.target, *src, c, r, o);
        EXPECT_EQ(res.tokens, ar.tokens) << m << " T " << t << " seed " << seed;
        accepted += res.stats.summary.tokens - res.stats.summary.target_forwards;
      }
    }
  }
  EXPECT_GT(accepted, 0);
}
