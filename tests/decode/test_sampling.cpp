// The logits processor (CFG, temperature, top-k with ties, top-p, greedy) and seeded sampling.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "decode/sampling.h"
#include "decode/settings/method.h"
#include "decode/settings/picture_settings.h"
#include "error_of.h"
#include "util/error.h"

using namespace adtree::decode;

TEST(CfgMix, IsUncondPlusScaleTimesDifference) {
  auto c = at::tensor({1.f, 2.f, 3.f}), u = at::tensor({0.5f, 2.5f, -1.f});
  auto m = cfg_mix(c, u, 4.0);
  EXPECT_TRUE(at::allclose(m, at::tensor({2.5f, 0.5f, 15.f})));
}

TEST(TopK, KeepsTiesWithTheKthValue) {
  auto l = at::tensor({5.f, 3.f, 3.f, 3.f, 1.f});
  auto f = top_k_filter(l, 2);  // the 2nd largest is 3: all three 3s survive
  EXPECT_TRUE(std::isinf(f[4].item<float>()));
  for (int i = 0; i < 4; ++i) EXPECT_FALSE(std::isinf(f[i].item<float>())) << i;
  EXPECT_TRUE(at::equal(top_k_filter(l, 0), l));
}

TEST(TopP, BoundaryIsExact) {
  // probs 0.5, 0.3, 0.2: p = 0.8 keeps {0.5, 0.3} (mass before the third is exactly 0.8).
  auto l = at::log(at::tensor({0.2f, 0.5f, 0.3f}));
  auto f = top_p_filter(l, 0.8);
  EXPECT_TRUE(std::isinf(f[0].item<float>()));
  EXPECT_FALSE(std::isinf(f[1].item<float>()));
  EXPECT_FALSE(std::isinf(f[2].item<float>()));
  // Slightly more than 0.8 needs the third token.
  EXPECT_FALSE(std::isinf(top_p_filter(l, 0.81)[0].item<float>()));
  // A tiny p still keeps the top token.
  auto g = top_p_filter(l, 1e-6);
  EXPECT_FALSE(std::isinf(g[1].item<float>()));
  EXPECT_TRUE(std::isinf(g[2].item<float>()));
}

TEST(LogitsProcessor, TemperatureScalesBeforeFiltering) {
  SamplingParams p;
  p.cfg_scale = 1.0;
  p.temperature = 2.0;
  LogitsProcessor proc(p);
  auto logits = at::tensor({1.f, 2.f, 4.f}).view({1, 1, 3});
  auto out = proc.process(logits, 0);
  EXPECT_TRUE(at::allclose(out.probs[0], at::softmax(at::tensor({0.5f, 1.f, 2.f}), 0)));
  EXPECT_NEAR(out.top1[0].item<float>(),
              at::softmax(at::tensor({0.5f, 1.f, 2.f}), 0)[2].item<float>(), 1e-6);
}

TEST(LogitsProcessor, CfgBatchIsMixedAndIntervalSwitchesToCond) {
  SamplingParams p;
  p.cfg_scale = 3.0;
  p.cfg_interval = 1;
  LogitsProcessor proc(p);
  auto cond = at::tensor({1.f, 0.f, 0.f}), unc = at::tensor({0.f, 0.f, 1.f});
  auto logits =
      at::stack({at::stack({cond, cond, cond}), at::stack({unc, unc, unc})});  // [2, 3, 3]
  auto out = proc.process(logits, 0);  // rows predict tokens 0, 1, 2: token 2 is past the interval
  auto mixed = at::softmax(cfg_mix(cond, unc, 3.0), 0);
  EXPECT_TRUE(at::allclose(out.probs[0], mixed));
  EXPECT_TRUE(at::allclose(out.probs[1], mixed));
  EXPECT_TRUE(at::allclose(out.probs[2], at::softmax(cond, 0)));
}

// MAR's linear CFG schedule: the row predicting image token i of N mixes with
// s_i = 1 + (s - 1) i / N, checked against plain doubles; cfg_interval still switches to the cond
// logits after its token.
TEST(LogitsProcessor, LinearCfgScheduleFollowsTheFractionGenerated) {
  SamplingParams p;
  p.cfg_scale = 3.0;
  p.cfg_schedule = CfgSchedule::Linear;
  const int64_t n = 4;
  LogitsProcessor proc(p, n);
  const std::vector<double> c{1.0, 0.0, -0.5}, u{0.0, 0.25, 1.0};
  auto cond = at::tensor({1.f, 0.f, -0.5f}), unc = at::tensor({0.f, 0.25f, 1.f});
  auto logits = at::stack({at::stack({cond, cond, cond, cond}), at::stack({unc, unc, unc, unc})});
  auto expected = [&](int64_t i) {
    const double s = 1.0 + (3.0 - 1.0) * double(i) / double(n);
    std::vector<double> z(3), e(3);
    double sum = 0;
    for (size_t k = 0; k < 3; ++k) z[k] = u[k] + s * (c[k] - u[k]), sum += std::exp(z[k]);
    for (size_t k = 0; k < 3; ++k) e[k] = std::exp(z[k]) / sum;
    return e;
  };
  auto check = [&](const at::Tensor& row, int64_t i) {
    const auto e = expected(i);
    for (size_t k = 0; k < 3; ++k) EXPECT_NEAR(row[int64_t(k)].item<double>(), e[k], 1e-6) << i;
  };
  auto out = proc.process(logits, 0);  // rows predict tokens 0..3
  for (int64_t i = 0; i < n; ++i) check(out.probs[i], i);
  EXPECT_TRUE(at::allclose(out.probs[0], at::softmax(cond, 0)))
      << "token 0: s_0 = 1, the prompt's logits alone";
  // Rows of a draft tree predict arbitrary indices.
  auto rows = proc.process_rows(logits.narrow(1, 0, 2), std::vector<int64_t>{3, 1});
  check(rows.probs[0], 3);
  check(rows.probs[1], 1);
  p.cfg_interval = 1;
  auto switched = LogitsProcessor(p, n).process(logits, 0);
  check(switched.probs[1], 1);
  EXPECT_TRUE(at::allclose(switched.probs[2], at::softmax(cond, 0)));
  // The schedule needs N; without CFG there is nothing to schedule.
  EXPECT_THROW(LogitsProcessor{p}, adtree::Error);
  p.cfg_scale = 1.0;
  EXPECT_NO_THROW(LogitsProcessor{p});
  EXPECT_EQ(cfg_schedule_from_string(to_string(CfgSchedule::Linear)), CfgSchedule::Linear);
  EXPECT_THROW(cfg_schedule_from_string("cosine"), adtree::Error);
}

TEST(LogitsProcessor, GreedyIsOneHotAtArgmaxWithTop1AtTemperatureOne) {
  SamplingParams p;
  p.cfg_scale = 1.0;
  p.temperature = 0.0;
  LogitsProcessor proc(p);
  auto logits = at::tensor({0.f, 3.f, 1.f}).view({1, 1, 3});
  auto out = proc.process(logits, 0);
  EXPECT_TRUE(at::equal(out.probs[0], at::tensor({0.f, 1.f, 0.f})));
  EXPECT_NEAR(out.top1[0].item<float>(),
              at::softmax(at::tensor({0.f, 3.f, 1.f}), 0)[1].item<float>(), 1e-6);
}

TEST(SampleFrom, FollowsTheDistribution) {
  // 30,000 draws from (0.1, 0.6, 0.3, 0): chi-square with 2 dof must stay below 13.8 (p = 0.001);
  // a 1-point error in one probability (0.61 instead of 0.6) already gives ~17 on average.
  adtree::Rng rng(42);
  auto probs = at::tensor({0.1f, 0.6f, 0.3f, 0.f});
  std::vector<int> counts(4, 0);
  const int n = 30000;
  for (int i = 0; i < n; ++i) ++counts[size_t(sample_from(probs, rng))];
  EXPECT_EQ(counts[3], 0);
  double chi2 = 0;
  const double p[3] = {0.1, 0.6, 0.3};
  for (int k = 0; k < 3; ++k) chi2 += std::pow(counts[size_t(k)] - n * p[k], 2) / (n * p[k]);
  EXPECT_LT(chi2, 13.8);
}

TEST(SampleFrom, SameSeedSameDraws) {
  adtree::Rng a(7), b(7), c(8);
  auto probs = at::softmax(at::randn({100}), 0);
  std::vector<int64_t> x, y, z;
  for (int i = 0; i < 50; ++i) {
    x.push_back(sample_from(probs, a));
    y.push_back(sample_from(probs, b));
    z.push_back(sample_from(probs, c));
  }
  EXPECT_EQ(x, y);
  EXPECT_NE(x, z);
}

TEST(SamplingParams, RejectsOutOfRangeSettings) {
  auto bad = [](auto mutate) {
    SamplingParams p;
    mutate(p);
    EXPECT_THROW(p.validate(100, 16), adtree::Error);
  };
  bad([](SamplingParams& p) { p.temperature = -1; });
  bad([](SamplingParams& p) { p.top_k = 101; });
  bad([](SamplingParams& p) { p.top_k = -2; });
  bad([](SamplingParams& p) { p.top_p = 0; });
  bad([](SamplingParams& p) { p.top_p = 1.5; });
  bad([](SamplingParams& p) { p.cfg_scale = NAN; });
  EXPECT_THROW(SamplingParams::from_json({{"tempreature", 1.0}}, SamplingParams{}), adtree::Error);
  EXPECT_THROW(SamplingParams::from_json({{"top_k", "many"}}, SamplingParams{}), adtree::Error);
}

using adtree::testing::error_of;

// Settings read from files (a PNG's chunk, a saved run, presets) name the field a wrong value is
// in, with the right words for non-finite numbers, instead of a JSON library exception.
TEST(SettingsFromFiles, WrongTypesAndNonFiniteNumbersNameTheField) {
  using adtree::decode::check_picture_settings;
  using adtree::decode::MethodSettings;
  auto has = [](const std::string& msg, const std::string& part) {
    EXPECT_NE(msg.find(part), std::string::npos) << msg;
  };
  has(error_of([] {
        check_picture_settings(nlohmann::json::array({1, 2}));
      }),
      "settings are not a JSON object");
  has(error_of([] {
        check_picture_settings({{"seed", -5}});
      }),
      "setting 'seed' must be an integer >= 0");
  has(error_of([] { check_picture_settings({{"prompt", 3}}); }), "setting 'prompt' must be a");
  has(error_of([] {
        check_picture_settings({{"model", {{"dir", 3}}}});
      }),
      "setting 'model.dir' must be a string");
  EXPECT_EQ(error_of([] {
              check_picture_settings({{"prompt", "cat"},
                                      {"seed", 3},
                                      {"model", {{"dir", "/m"}, {"hash", "sha256:0"}}},
                                      {"method_settings", MethodSettings{}.to_json()},
                                      {"sampling", SamplingParams{}.to_json()}});
            }),
            "");
  has(error_of([] {
        MethodSettings::from_json({{"adt", {{"beta", "high"}}}});
      }),
      "invalid method settings: 'adt.beta' must be a number, got \"high\"");
  has(error_of([] { MethodSettings::from_json(nlohmann::json::array()); }),
      "invalid method settings: expected an object");
  has(error_of([] {
        SamplingParams::from_json({{"temperature", "hot"}}, SamplingParams{});
      }),
      "'temperature' must be a number");
  has(error_of([] { SamplingParams::from_json(nlohmann::json::array(), SamplingParams{}); }),
      "expected a JSON object");
  SamplingParams p;
  p.temperature = INFINITY;
  has(error_of([&] { p.validate(100, 16); }),
      "invalid sampling setting: temperature (--temperature) must be >= 0");
}
