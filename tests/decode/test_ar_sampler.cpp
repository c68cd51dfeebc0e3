// Plain AR decoding: reproducible under a seed, greedy equals an independent argmax chain over
// full forwards, statistics complete, cancel honoured.
#include <gtest/gtest.h>

#include <atomic>

#include "decode/ar_sampler.h"
#include "model/conditioning.h"
#include "model/llamagen/gpt.h"
#include "util/error.h"

using namespace adtree;
using namespace adtree::model;

namespace {
struct Fixture {
  GptConfig cfg = GptConfig::preset("micro");
  TensorMap w;
  std::unique_ptr<Gpt> gpt;
  Fixture() {
    auto specs = gpt_param_specs(cfg);
    for (auto& s : specs) {
      if (s.init == Init::Normal) s.scale = 0.3;  // peaked enough that seeds matter
    }
    w = init_params(specs, 3);
    gpt = std::make_unique<Gpt>(cfg, w);
  }
  Condition cond(bool cfg_on) const { return condition_from_words(*gpt, {1, 5}, cfg_on); }
};
}  // namespace

TEST(ArSampler, SameSeedSameTokensDifferentSeedDifferentTokens) {
  Fixture f;
  decode::SamplingParams p;
  auto a = decode::generate_ar(*f.gpt, f.cond(true), p, 123);
  auto b = decode::generate_ar(*f.gpt, f.cond(true), p, 123);
  auto c = decode::generate_ar(*f.gpt, f.cond(true), p, 124);
  ASSERT_EQ(a.tokens.size(), size_t(f.cfg.image_tokens()));
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_NE(a.tokens, c.tokens);
}

TEST(ArSampler, GreedyEqualsArgmaxChainOverFullForwards) {
  Fixture f;
  decode::SamplingParams p;
  p.temperature = 0;
  p.cfg_scale = 2.0;
  auto cond = f.cond(true);
  auto res = decode::generate_ar(*f.gpt, cond, p, 0);
  // Independent chain: no cache, one causal forward over the whole sequence for every token.
  std::vector<int64_t> chain;
  const int64_t C = f.cfg.cond_tokens();
  for (int64_t n = 0; n < f.cfg.image_tokens(); ++n) {
    auto x = f.gpt->embed_condition(cond);
    if (n > 0) {
      auto t = at::tensor(chain).unsqueeze(0).repeat({2, 1});
      x = at::cat({x, f.gpt->embed_tokens(t)}, 1);
    }
    auto valid = at::cat({cond.caption_mask, at::ones({2, n}, at::kBool)}, 1);
    auto logits = f.gpt->forward(x, at::arange(C + n, at::kLong), nullptr, {}, valid).logits;
    auto mixed = decode::cfg_mix(logits[0][C + n - 1], logits[1][C + n - 1], 2.0);
    chain.push_back(mixed.argmax().item<int64_t>());
  }
  EXPECT_EQ(res.tokens, chain);
}

TEST(ArSampler, StatisticsAreCompleteAndStreamedInOrder) {
  Fixture f;
  decode::SamplingParams p;
  std::vector<int64_t> seen_cells, seen_tokens;
  auto res = decode::generate_ar(*f.gpt, f.cond(true), p, 5, [&](const decode::StepEvent& e) {
    seen_cells.push_back(e.record.first_cell);
    seen_tokens.insert(seen_tokens.end(), e.tokens.begin(), e.tokens.end());
    EXPECT_EQ(e.cells.size(), 1u);
    EXPECT_EQ(e.record.committed, 1);
  });
  const auto& s = res.stats;
  ASSERT_TRUE(s.grids.all_filled());
  for (int64_t i = 0; i < f.cfg.image_tokens(); ++i) {
    EXPECT_EQ(seen_cells[size_t(i)], i);
    EXPECT_EQ(s.grids.at(i).depth, 0);
    EXPECT_EQ(s.grids.at(i).accept_len, 1);
    EXPECT_GT(s.grids.at(i).top1, 0.f);
    EXPECT_LE(s.grids.at(i).top1, 1.f);
  }
  EXPECT_EQ(seen_tokens, res.tokens);
  EXPECT_EQ(s.summary.tokens, f.cfg.image_tokens());
  EXPECT_DOUBLE_EQ(s.summary.tau, 1.0);
  ASSERT_EQ(s.depth_reach.size(), 1u);
  EXPECT_EQ(s.depth_reach[0], f.cfg.image_tokens());
  auto j = s.to_json();
  EXPECT_EQ(j["grids"]["top1"].size(), size_t(f.cfg.grid_h));
  EXPECT_EQ(j["steps"].size(), size_t(f.cfg.image_tokens()));
}

TEST(ArSampler, CancelStopsBetweenSteps) {
  Fixture f;
  std::atomic<bool> cancel{false};
  decode::SamplingParams p;
  int steps = 0;
  auto res = decode::generate_ar(
      *f.gpt, f.cond(true), p, 1,
      [&](const decode::StepEvent&) {
        if (++steps == 3) cancel = true;
      },
      &cancel);
  EXPECT_TRUE(res.cancelled);
  EXPECT_EQ(res.tokens.size(), 3u);
}

TEST(ArSampler, WrongConditionBatchIsAnError) {
  Fixture f;
  decode::SamplingParams p;  // CFG on needs [cond; uncond]
  EXPECT_THROW(decode::generate_ar(*f.gpt, f.cond(false), p, 1), adtree::Error);
  p.cfg_scale = 1.0;
  EXPECT_NO_THROW(decode::generate_ar(*f.gpt, f.cond(false), p, 1));
}

// A condition built for the other CFG setting is a clear error, not a shape error deep inside.
TEST(ArSampler, ConditionBatchMustMatchTheCfgSetting) {
  Fixture f;
  decode::SamplingParams p;
  p.cfg_scale = 2.0;
  try {
    decode::generate_ar(*f.gpt, f.cond(false), p, 0);
    FAIL() << "a one-row condition with CFG was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "the condition batch must be 2 ([cond; uncond]) with CFG, got 1"),
              std::string::npos)
        << e.what();
  }
  p.cfg_scale = 1.0;
  EXPECT_THROW(decode::generate_ar(*f.gpt, f.cond(true), p, 0), Error);
}
