// CSpD's decode loop on random continuous-family models (issue "CSpD", part 4): with the target as
// its own draft every draft stands and the picture is AR's; with another draft the grid fills, the
// counts add up and every token's origin is recorded. The accept / residual rule itself is proven
// against exact densities in test_cspd_rule.cpp.
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "decode/continuous/continuous_ar.h"
#include "decode/continuous/continuous_stepper.h"
#include "decode/continuous/cspd_decoder.h"
#include "model/conditioning.h"
#include "model/continuous/continuous_gpt.h"
#include "util/error.h"

namespace adtree::decode {
namespace {

model::ContinuousConfig cspd_micro_config() {
  model::ContinuousConfig c;
  c.backbone = model::GptConfig::preset("micro");
  c.backbone.vocab_size = 2;
  c.head.token_dim = 4;
  c.head.cond_dim = c.backbone.dim;
  c.head.width = 32;
  c.head.blocks = 2;
  c.head.freq_dim = 32;
  c.train_steps = 100;
  c.sample_steps = 6;
  return c;
}

// Random weights everywhere: the zero-initialised modulations and output of a fresh head would
// make every token a function of its noise alone, whatever the draft.
model::ContinuousGpt cspd_random_model(uint64_t seed) {
  const auto cfg = cspd_micro_config();
  auto w = model::init_params(model::continuous_param_specs(cfg), seed);
  auto gen = at::detail::createCPUGenerator(seed + 1);
  for (auto& [name, t] : w) {
    if (name.rfind("head.", 0) == 0 && t.abs().max().item<float>() == 0.0f)
      t.normal_(0.0, 0.2, gen);
  }
  return model::ContinuousGpt(cfg, w);
}

model::Condition cspd_condition(const model::ContinuousGpt& m, bool cfg) {
  return model::condition_from_words(m.backbone(), {1, 5, 7}, cfg);
}

ContinuousSettings cspd_settings(double cfg) {
  ContinuousSettings s;
  s.cfg = cfg;
  s.seed = 11;
  s.gamma = 3;
  s.prefill_ratio = 0.1;
  return s;
}

TEST(CspdDecoder, TheTargetAsItsOwnDraftAcceptsEveryDraftAndDrawsArsPicture) {
  const auto m = cspd_random_model(3);
  for (double cfg : {1.0, 2.5}) {
    const auto s = cspd_settings(cfg);
    const auto cond = cspd_condition(m, cfg != 1.0);
    const auto ar = generate_continuous_ar(m, cond, s);
    const auto sd = generate_cspd(m, m, cond, cond, s);
    ASSERT_EQ(sd.tokens.sizes(), ar.tokens.sizes());
    EXPECT_GT(sd.drafted, 0);
    EXPECT_EQ(sd.accepted, sd.drafted) << "cfg " << cfg;
    EXPECT_EQ(sd.resampled, 0);
    // Blocks and single steps of the backbone round differently; the tokens agree to that.
    EXPECT_LT((sd.tokens - ar.tokens).abs().max().item<float>(), 1e-4f) << "cfg " << cfg;
    EXPECT_GT(sd.tokens_per_round(), 1.0);
    // The listener hears every step with its tokens; together they are the picture.
    std::vector<at::Tensor> heard;
    generate_cspd(m, m, cond, cond, s, [&](const StepEvent& ev, const at::Tensor& t) {
      EXPECT_EQ(int64_t(ev.cells.size()), t.size(0));
      heard.push_back(t.reshape({-1, 4}));
    });
    EXPECT_TRUE(at::equal(at::cat(heard, 0), sd.tokens));
  }
}

TEST(CspdDecoder, AnotherDraftFillsTheGridAndEveryTokenHasItsOrigin) {
  const auto target = cspd_random_model(3), draft = cspd_random_model(8);
  const auto s = cspd_settings(2.0);
  const auto r =
      generate_cspd(target, draft, cspd_condition(target, true), cspd_condition(draft, true), s);
  const int64_t N = target.config().backbone.image_tokens();
  ASSERT_EQ(r.tokens.size(0), N);
  EXPECT_TRUE(r.tokens.isfinite().all().item<bool>());
  ASSERT_EQ(int64_t(r.origin.size()), N);
  int64_t accepted = 0, resampled = 0, target_only = 0;
  for (auto o : r.origin) {
    accepted += o == ContinuousOrigin::Accepted;
    resampled += o == ContinuousOrigin::Resampled;
    target_only += o == ContinuousOrigin::Target;
  }
  EXPECT_EQ(accepted, r.accepted);
  EXPECT_EQ(resampled, r.resampled);
  EXPECT_EQ(target_only, 2);  // ceil(0.1 * 16) pre-filled by the target
  EXPECT_LE(r.accepted + r.resampled, r.drafted);
  EXPECT_GT(r.resampled, 0) << "a random draft should be refused somewhere";
  // The steps in every method's format: the pre-filled tokens, then a step per round, committing
  // the whole grid; every cell has its statistics.
  ASSERT_EQ(int64_t(r.stats.steps.size()), 2 + r.rounds);
  int64_t committed = 0, accepted_head = 0;
  for (const auto& st : r.stats.steps) committed += st.committed, accepted_head += st.accepted_head;
  EXPECT_EQ(committed, N);
  EXPECT_EQ(accepted_head, r.accepted);
  EXPECT_TRUE(r.stats.grids.all_filled());
  EXPECT_NO_THROW(validate_run(r.stats, std::vector<int64_t>(size_t(N), 0)));
  // The pre-filled tokens are AR's: the same noises, the same model, nothing drafted yet.
  const auto ar = generate_continuous_ar(target, cspd_condition(target, true), s);
  EXPECT_LT((r.tokens.narrow(0, 0, 2) - ar.tokens.narrow(0, 0, 2)).abs().max().item<float>(),
            1e-5f);
}

TEST(CspdDecoder, ModelsThatDoNotShareTokensAreRefused) {
  auto cfg = cspd_micro_config();
  cfg.head.token_dim = 3;
  auto w = model::init_params(model::continuous_param_specs(cfg), 1);
  const model::ContinuousGpt other(cfg, w);
  const auto target = cspd_random_model(3);
  const auto s = cspd_settings(1.0);
  EXPECT_THROW(
      generate_cspd(target, other, cspd_condition(target, false), cspd_condition(other, false), s),
      Error);
  auto bad = s;
  bad.gamma = 0;
  EXPECT_THROW(generate_cspd(target, target, cspd_condition(target, false),
                             cspd_condition(target, false), bad),
               Error);
}

TEST(CspdDecoder, AConditionWithoutTheNullRowUnderCfgIsRefused) {
  const auto m = cspd_random_model(3);
  EXPECT_THROW(generate_continuous_ar(m, cspd_condition(m, false), cspd_settings(3.0)), Error);
}

}  // namespace
}  // namespace adtree::decode

namespace adtree::decode {
namespace {

// The released code's inner temperature widens both last-step Gaussians alike: the target as its
// own draft still has every draft stand and draws AR's picture with it.
TEST(CspdDecoder, AnInnerTemperatureKeepsTheTargetsOwnDraftsStanding) {
  const auto m = cspd_random_model(3);
  auto s = cspd_settings(2.0);
  s.inner_temperature = 42;
  const auto cond = cspd_condition(m, true);
  const auto ar = generate_continuous_ar(m, cond, s);
  const auto sd = generate_cspd(m, m, cond, cond, s);
  EXPECT_EQ(sd.accepted, sd.drafted);
  EXPECT_LT((sd.tokens - ar.tokens).abs().max().item<float>(), 1e-4f);
}

}  // namespace
}  // namespace adtree::decode

namespace adtree::decode {
namespace {

// Fixed variance: every step's std is the schedule's beta~, so two different models' sums of
// log stds before the last step are equal (S = 1) and equal to the schedule's own; learned, the
// random heads' interpolations make them differ.
TEST(CspdDecoder, FixedVarianceMakesTheStdProductOne) {
  const auto target = cspd_random_model(3), draft = cspd_random_model(8);
  const auto cond_t = cspd_condition(target, true), cond_d = cspd_condition(draft, true);
  for (bool fixed : {false, true}) {
    auto s = cspd_settings(2.0);
    s.fixed_variance = fixed;
    ContinuousStepper t(target, cond_t, s), d(draft, cond_d, s);
    const auto noise = trajectory_noise(5, 1, t.steps(), 4);
    const auto ht = t.head(t.feed(at::empty({0, 4})), noise);
    const auto hd = d.head(d.feed(at::empty({0, 4})), noise);
    const double gap = std::abs(ht.log_std_before_last[0].item<double>() -
                                hd.log_std_before_last[0].item<double>());
    if (!fixed) {
      EXPECT_GT(gap, 1e-3);
      continue;
    }
    EXPECT_LT(gap, 1e-9);
    const auto sch = target.schedule_with(t.steps(), true);
    double want = 0;
    for (int k = 1; k < sch.sample_steps(); ++k) want += 4 * 0.5 * sch.posterior_log_variance(k);
    EXPECT_NEAR(ht.log_std_before_last[0].item<double>(), want, 1e-4);
  }
}

// Every judged draft records its log r and log S (the run file's "log_ratio" and "log_s"), so a
// refusal can be read apart: with fixed variance log S is 0 and min(1, r) is the acceptance
// probability; tokens no draft was judged for record none.
TEST(CspdDecoder, JudgedDraftsRecordTheirLogRatioAndLogS) {
  const auto target = cspd_random_model(3), draft = cspd_random_model(8);
  auto s = cspd_settings(2.0);
  s.fixed_variance = true;
  s.inner_temperature = 20;
  const auto r =
      generate_cspd(target, draft, cspd_condition(target, true), cspd_condition(draft, true), s);
  ASSERT_EQ(r.log_ratio.size(), r.origin.size());
  int judged = 0;
  for (size_t i = 0; i < r.origin.size(); ++i) {
    const bool was_judged =
        r.origin[i] == ContinuousOrigin::Accepted || r.origin[i] == ContinuousOrigin::Resampled;
    EXPECT_EQ(std::isnan(r.log_ratio[i]), !was_judged) << i;
    if (!was_judged) continue;
    ++judged;
    EXPECT_NEAR(r.log_s[i], 0.0, 1e-9);
    EXPECT_NEAR(r.accept_prob[i], std::exp(std::min(0.0, r.log_ratio[i])), 1e-12);
  }
  EXPECT_GT(judged, 0);
  const auto j = to_json(r);
  EXPECT_EQ(j.at("log_ratio").size(), r.origin.size());
  EXPECT_EQ(j.at("log_s").size(), r.origin.size());
}

}  // namespace
}  // namespace adtree::decode
