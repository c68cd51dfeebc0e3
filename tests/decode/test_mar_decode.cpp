// AR and CSpD on MAR models (core/decode/mar; issue "MAR checkpoints"), on random tiny MAR
// directories written by `adtree model random --family mar`'s code:
// - the masking schedule covers every token once, with MAR's CFG ramp;
// - the product's AR is the parity-tested batched path (mar_generate) for one picture;
// - CSpD: the target as its own draft, one schedule step a round, has every draft stand; with
//   another draft every cell is filled once and the counts add up;
// - CSpD's rule on MAR's own heads (one reverse step, where the rule is exact speculative
//   sampling) emits the target head's distribution, and a wrong rule fails the same test;
// - the lean path's packed fp32 and bf16 backbones against the unpacked reference;
// - requests a MAR model cannot run are refused with the setting named.
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <set>

#include "decode/continuous/cspd_rule.h"
#include "decode/mar/mar_decode.h"
#include "decode/mar/mar_decoder.h"
#include "decode/mar/mar_generate.h"
#include "decode/mar/mar_schedule.h"
#include "decode/mar/mar_stepper.h"
#include "decode/settings/method_table.h"
#include "model/dir_files.h"
#include "model/mar/random_mar.h"
#include "util/error.h"

namespace adtree::decode {
namespace {

namespace fs = std::filesystem;

// One random tiny MAR with a draft (another seed) for the whole suite.
const model::MarBundle& tiny_mar() {
  static const model::MarBundle m = [] {
    const auto dir =
        fs::temp_directory_path() / ("adtree_test_mar_decode_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    model::RandomMarRequest r;
    r.out = dir.string();
    r.shape = "tiny";
    r.draft = "tiny";
    r.seed = 5;
    model::write_random_mar_model(r);
    auto b = model::load_mar_dir(r.out);
    fs::remove_all(dir);
    return b;
  }();
  return m;
}

ContinuousSettings mar_test_settings(double cfg) {
  ContinuousSettings s;
  s.cfg = cfg;
  s.cfg_linear = true;
  s.num_iter = 6;
  s.seed = 21;
  s.gamma = 2;
  s.prefill_ratio = 0.1;
  return s;
}

TEST(MarSchedule, StepsCoverEveryTokenOnceWithMarsCfgRamp) {
  const auto steps = mar_masking_schedule(256, 64, 3.0, true);
  ASSERT_EQ(steps.size(), 64u);
  int64_t total = 0, masked = 256;
  for (const auto& s : steps) {
    EXPECT_EQ(s.masked_before, masked);
    EXPECT_GE(s.count(), 0);
    total += s.count();
    masked = s.masked_after;
  }
  EXPECT_EQ(total, 256);
  EXPECT_EQ(steps.back().masked_after, 0);
  // Step 0 keeps floor(256 cos(pi / 128)) = 255 masked: one token, guided at 1 + 2 / 256.
  EXPECT_EQ(steps[0].masked_after, 255);
  EXPECT_DOUBLE_EQ(steps[0].cfg, 1.0 + 2.0 * 1.0 / 256.0);
  // The last step's scale counts one token still masked, as MAR's mask_len does.
  EXPECT_DOUBLE_EQ(steps.back().cfg, 1.0 + 2.0 * 255.0 / 256.0);
  for (const auto& s : mar_masking_schedule(256, 64, 3.0, false)) EXPECT_EQ(s.cfg, 3.0);
  EXPECT_THROW(mar_masking_schedule(16, 17, 1.0, true), Error);
  EXPECT_THROW(mar_masking_schedule(16, 0, 1.0, true), Error);
}

// The product's AR is MAR's sample_tokens for one picture: the same tokens as the batched path
// that the parity tests pin to MAR's code, given the same order and noises (the lean head against
// libtorch's: rounding apart).
TEST(MarAr, IsTheParityTestedGenerationForOnePicture) {
  const auto& m = tiny_mar();
  for (double cfg : {1.0, 2.5}) {
    const auto s = mar_test_settings(cfg);
    const auto r = generate_mar_ar(m.target, 3, s);
    const auto& c = m.target.backbone->config();
    const auto noise = trajectory_noise(s.seed, c.seq_len(), c.sample_steps, c.token_dim);
    MarNoise n{mar_order(s.seed, c.seq_len()).unsqueeze(0), noise.select(1, 0).unsqueeze(0),
               noise.narrow(1, 1, c.sample_steps).unsqueeze(0)};
    MarSampling ms{s.num_iter, s.cfg, true, s.temperature};
    const auto want = mar_generate(*m.target.backbone, *m.target.head, m.target.schedule,
                                   at::full({1}, 3, at::kLong), ms, n)[0];
    const double scale = want.abs().max().item<double>();
    EXPECT_LT((r.tokens - want).abs().max().item<double>(), 1e-4 * scale) << "cfg " << cfg;
  }
}

TEST(MarAr, FillsEveryCellOnceAndRepeatsPerSeed) {
  const auto& m = tiny_mar();
  const auto s = mar_test_settings(2.0);
  const auto a = generate_mar_ar(m.target, 1, s), b = generate_mar_ar(m.target, 1, s);
  EXPECT_TRUE(at::equal(a.tokens, b.tokens));
  std::set<int64_t> cells;
  int64_t count = 0;
  for (const auto& st : a.stats.steps)
    for (int64_t i = 0; i < st.committed; ++i, ++count) cells.insert(st.cell(size_t(i)));
  EXPECT_EQ(count, 16);
  EXPECT_EQ(cells.size(), 16u);
  EXPECT_TRUE(a.stats.grids.all_filled());
  auto other = s;
  other.seed += 1;
  EXPECT_FALSE(at::allclose(generate_mar_ar(m.target, 1, other).tokens, a.tokens));
}

// One schedule step a round: the target's pass sees what the draft's saw, so the target as its
// own draft judges identical densities (r = 1) and every draft stands.
TEST(MarCspd, TheTargetAsItsOwnDraftAtOneStepARoundKeepsEveryDraft) {
  const auto& m = tiny_mar();
  auto s = mar_test_settings(2.0);
  s.gamma = 1;
  const auto r = generate_mar_cspd(m.target, m.target, 4, s);
  EXPECT_GT(r.drafted, 0);
  EXPECT_EQ(r.accepted, r.drafted);
  EXPECT_EQ(r.resampled, 0);
  for (size_t i = 0; i < r.log_ratio.size(); ++i)
    if (!std::isnan(r.log_ratio[i])) {
      EXPECT_NEAR(r.log_ratio[i], 0.0, 1e-9);
    }
}

TEST(MarCspd, AnotherDraftFillsEveryCellOnceAndTheCountsAddUp) {
  const auto& m = tiny_mar();
  const auto s = mar_test_settings(2.0);
  const auto r = generate_mar_cspd(m.target, m.draft, 4, s);
  EXPECT_EQ(r.accepted + r.resampled, r.drafted);
  EXPECT_GT(r.rounds, 0);
  EXPECT_TRUE(r.stats.grids.all_filled());
  std::set<int64_t> cells;
  for (const auto& st : r.stats.steps)
    for (int64_t i = 0; i < st.committed; ++i) cells.insert(st.cell(size_t(i)));
  EXPECT_EQ(cells.size(), 16u);
  int64_t drafted = 0;
  for (auto o : r.origin) drafted += o != ContinuousOrigin::Target ? 1 : 0;
  EXPECT_EQ(drafted, r.drafted);
  EXPECT_TRUE(at::isfinite(r.tokens).all().item<bool>());
  // The same seed repeats the run.
  EXPECT_TRUE(at::equal(generate_mar_cspd(m.target, m.draft, 4, s).tokens, r.tokens));
}

// The last reverse step's Gaussian of one position under each of the two tiny MARs, one reverse
// step in all (S = 1: CSpD's rule is then exact speculative sampling). DDPM's step to x0 is
// nearly deterministic (the posterior variance there is tiny against the two heads' difference),
// so the heads run at fixed variance (the same std for both) with a temperature that widens it
// to the size of that difference: both are MAR's sampling settings, and the test then has power.
std::pair<DiagGaussian, DiagGaussian> one_step_heads() {
  const auto& m = tiny_mar();
  const auto tokens = at::zeros({16, 4});
  const auto known = at::zeros({16}, at::kBool);
  const auto pos = at::full({1}, 5, at::kLong);
  const auto noise = trajectory_noise(3, 1, 1, 4);
  auto last_step = [&](const model::MarModel& model, double temperature) {
    ContinuousSettings s = mar_test_settings(1.0);
    s.diffusion_steps = 1;
    s.fixed_variance = true;
    s.temperature = temperature;
    MarStepper p(model, 2, s);
    return p.head(p.conditions(tokens, known, pos), 1.0, noise, true);
  };
  const auto p1 = last_step(m.target, 1.0), q1 = last_step(m.draft, 1.0);
  const double gap = (p1.last_mean - q1.last_mean).abs().max().item<double>();
  const double widen = gap / p1.last_log_std.exp().max().item<double>();
  auto gaussian = [](const model::HeadTrajectory& h) {
    const auto mean = h.last_mean[0].to(at::kDouble).contiguous();
    const auto sd = h.last_log_std[0].exp().to(at::kDouble).contiguous();
    return DiagGaussian(Token(mean.data_ptr<double>(), mean.data_ptr<double>() + 4),
                        std::vector<double>(sd.data_ptr<double>(), sd.data_ptr<double>() + 4));
  };
  return {gaussian(last_step(m.target, widen)), gaussian(last_step(m.draft, widen))};
}

// Chi-square of the emitted tokens' first number over 40 bins of equal mass under p's marginal
// (39 degrees of freedom, whose 0.9999 quantile is 80.1); `drop_residual`: a wrong rule that
// emits a fresh target sample on a rejection.
double emitted_chi_square(const DiagGaussian& p, const DiagGaussian& q, bool drop_residual,
                          double& rate) {
  constexpr int kDraws = 60000, kBins = 40;
  Rng rng(9);
  std::vector<double> count(kBins, 0.0);
  int accepted = 0;
  const double mu = p.mean()[0], sd = p.std_dev()[0];
  for (int i = 0; i < kDraws; ++i) {
    auto v = cspd_verify(q.sample(rng), p, q, 0.0, rng, 1000);
    if (!v.accepted && drop_residual) v.token = p.sample(rng);
    accepted += v.accepted;
    const double u = 0.5 * std::erfc(-(v.token[0] - mu) / (sd * std::sqrt(2.0)));
    count[size_t(std::min(kBins - 1, int(u * kBins)))] += 1.0;
  }
  rate = double(accepted) / kDraws;
  const double expect = double(kDraws) / kBins;
  double chi2 = 0.0;
  for (double c : count) chi2 += (c - expect) * (c - expect) / expect;
  return chi2;
}

TEST(MarCspd, OneStepMarHeadsEmitTheTargetsDistributionAndAWrongRuleFails) {
  const auto [p, q] = one_step_heads();
  // The two random heads differ enough for the test to have power.
  EXPECT_GT(std::abs(p.mean()[0] - q.mean()[0]), 0.3 * p.std_dev()[0]);
  double rate = 0.0;
  EXPECT_LT(emitted_chi_square(p, q, false, rate), 80.1);
  EXPECT_GT(rate, 0.0);
  EXPECT_LT(rate, 1.0);
  EXPECT_GT(emitted_chi_square(p, q, true, rate), 10 * 80.1);
}

// The lean path (model/mar/mar_backbone.h, pack): packed fp32 panels give the reference's head
// conditions within rounding; bf16 panels stay within a stated distance of fp32 (the largest
// difference of a condition, relative to the conditions' size: 2e-2 at most; measured
// on the tiny model: 5.7e-3); and a bf16 model is lossless against its own AR (the target as its
// own draft, one schedule step a round, keeps every draft).
TEST(MarLean, PackedPanelsMatchTheReferenceAndBf16StaysNear) {
  const auto dir =
      fs::temp_directory_path() / ("adtree_test_mar_lean_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  model::RandomMarRequest req;
  req.out = dir.string();
  req.seed = 8;
  model::write_random_mar_model(req);
  const auto fp32 = model::load_mar_dir(req.out, false, "fp32");
  const auto bf16 = model::load_mar_dir(req.out, false, "bf16");
  model::TensorMap weights;  // the backbone's tensors as stored: the unpacked reference
  for (auto& [k, t] : model::read_dir_weights(req.out, "mar.safetensors"))
    if (k.rfind("head.", 0) != 0) weights[k] = t;
  fs::remove_all(dir);
  const auto& c = fp32.target.backbone->config();
  const model::MarBackbone ref(c, weights);
  ASSERT_TRUE(fp32.target.backbone->packed());
  ASSERT_TRUE(bf16.target.backbone->packed() && bf16.target.bf16);
  ASSERT_FALSE(ref.packed());
  auto gen = at::detail::createCPUGenerator(4);
  const auto tokens = at::randn({2, c.seq_len(), c.token_dim}, gen);
  auto unknown = at::ones({2, c.seq_len()}, at::kBool);
  unknown.narrow(1, 3, 6).fill_(false);  // six known tokens a row
  const auto cls = ref.class_embedding(at::tensor({2, -1}, at::kLong));
  const auto want = ref.forward(tokens, unknown, cls);
  const double size = want.abs().max().item<double>();
  const double d32 =
      (fp32.target.backbone->forward(tokens, unknown, cls) - want).abs().max().item<double>();
  const double d16 =
      (bf16.target.backbone->forward(tokens, unknown, cls) - want).abs().max().item<double>();
  EXPECT_LT(d32, 1e-4 * size);
  EXPECT_LT(d16, 2e-2 * size);
  EXPECT_GT(d16, d32);  // the bf16 panels are in use
  std::printf("MAR lean path: fp32 %.2e, bf16 %.2e of the conditions' size %.3g\n", d32 / size,
              d16 / size, size);
  // Lossless against its own AR: the bf16 target as its own draft keeps every draft.
  auto s = mar_test_settings(2.0);
  s.gamma = 1;
  const auto r = generate_mar_cspd(bf16.target, bf16.target, 4, s);
  EXPECT_GT(r.drafted, 0);
  EXPECT_EQ(r.accepted, r.drafted);
}

TEST(MarDecode, RequestsAMarModelCannotRunAreRefusedWithTheSettingNamed) {
  const auto& m = tiny_mar();
  auto expect_refused = [&](DecodeRequest r, const std::string& words) {
    try {
      check_mar_request(m, r);
      ADD_FAILURE() << "accepted; expected: " << words;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  const auto ok = default_mar_request(m, Method::Cspd);
  EXPECT_NO_THROW(check_mar_request(m, ok));
  auto r = ok;
  r.method.method = Method::Dynamic;
  expect_refused(r, "vectors");
  r = ok;
  r.sampling.temperature = 0;
  expect_refused(r, "temperature");
  r = ok;
  r.sampling.top_k = 5;
  expect_refused(r, "top-k");
  r = ok;
  r.sampling.num_iter = 17;
  expect_refused(r, "num_iter");
  r = ok;
  r.sampling.diffusion_steps = 1001;
  expect_refused(r, "diffusion");
  EXPECT_THROW(mar_class(m, "no such class"), Error);
  EXPECT_EQ(mar_class(m, "3"), 3);
}

}  // namespace
}  // namespace adtree::decode
