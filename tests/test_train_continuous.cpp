// The continuous family's training pipeline on the tiny synthetic pictures (issue "CSpD", part 2):
// the KL VAE and the transformer + diffusion head each for a few steps (finite, falling loss, an
// exact resume), the assembled model directory loading and drawing with AR and CSpD, and the clear
// errors of bad directories and of requests this family cannot run.
#include <ATen/CPUGeneratorImpl.h>

#include <fstream>

#include "decode/continuous/continuous_decode.h"
#include "error_of.h"
#include "io/safetensors.h"
#include "model/continuous/continuous_dir.h"
#include "model/continuous/token_colours.h"
#include "train/continuous/assemble_continuous.h"
#include "train/continuous/continuous_fidelity.h"
#include "train/continuous/continuous_trainer.h"
#include "train/continuous/diffusion_loss.h"
#include "train/continuous/vae_trainer.h"
#include "train/run_files.h"
#include "train_fixture.h"
#include "util/error.h"

using adtree::testing::error_of;

namespace {

const json kVaeConfig = {
    {"latent_dim", 3},  {"ch", 8},     {"ch_mult", {1, 2}}, {"z_channels", 8},
    {"norm_groups", 4}, {"warmup", 0}, {"eval_every", 0},   {"checkpoint_every", 0}};
const json kTargetConfig = {{"dim", 32},        {"n_layer", 2},     {"n_head", 2},
                            {"cap_dim", 16},    {"cond_len", 6},    {"multiple_of", 32},
                            {"head_width", 32}, {"head_blocks", 2}, {"sample_steps", 4},
                            {"warmup", 0},      {"eval_every", 0},  {"checkpoint_every", 0},
                            {"dropout", 0.0},   {"train_steps", 50}};

json draft_config() {
  auto c = kTargetConfig;
  c["dim"] = 16;
  c["n_layer"] = 1;
  c["head_width"] = 16;
  c["head_blocks"] = 1;
  return c;
}

// One finished VAE run, target and draft per process: the later tests build on them.
struct Runs {
  std::string vae, target, draft;
};
const Runs& runs() {
  static const Runs r = [] {
    std::ostringstream log;
    const auto d = tiny_dataset();
    Runs out{temp_dir("vae"), temp_dir("target"), temp_dir("draft")};
    auto vc = kVaeConfig;
    vc["lr"] = 3e-3;
    tr::train_vae(d, options(out.vae, 30, vc, &log));
    tr::train_continuous(d, out.vae, options(out.target, 12, kTargetConfig, &log));
    tr::train_continuous(d, out.vae, options(out.draft, 12, draft_config(), &log));
    return out;
  }();
  return r;
}

std::string assembled(const std::string& name, bool with_draft = true,
                      const nlohmann::json& card = nlohmann::json::object()) {
  tr::ContinuousAssembleOptions o;
  o.vae_dir = runs().vae;
  o.target_dir = runs().target;
  if (with_draft) o.draft_dir = runs().draft;
  o.out = temp_dir(name);
  o.card = card;
  tr::assemble_continuous(o);
  return o.out;
}

}  // namespace

TEST(TrainVae, LossFallsAndTheTokensHaveUnitSpread) {
  std::ostringstream log;
  const auto d = tiny_dataset();
  auto cfg = kVaeConfig;
  cfg["lr"] = 3e-3;
  const auto out = temp_dir("vae");
  auto r = tr::train_vae(d, options(out, 24, cfg, &log));
  ASSERT_TRUE(r.finished);
  expect_finite_and_falling(r.losses);
  for (const char* f : {"vae.safetensors", "run.json", "metrics.jsonl"}) {
    EXPECT_TRUE(fs::exists(out + "/" + f)) << f;
  }
  EXPECT_GT(r.metrics["psnr_db"].get<double>(), 0.0);
  const auto vae = tr::load_vae(out);
  const auto tokens = tr::vae_tokens(vae, d, d.indices(adtree::io::Split::Train));
  EXPECT_EQ(tokens.sizes(), (std::vector<int64_t>{9, 16, 3}));
  // latent_scale is fitted to the training pictures' means: their tokens have std 1.
  EXPECT_NEAR(tokens.std().item<double>(), 1.0, 1e-3);
}

TEST(TrainVae, ResumeReproducesTheUninterruptedRun) {
  const auto d = tiny_dataset();
  expect_exact_resume("vae", 8, kVaeConfig,
                      [&](const tr::TrainOptions& o) { return tr::train_vae(d, o); });
}

TEST(TrainContinuous, LossFallsAndTheRunLoads) {
  std::ostringstream log;
  const auto d = tiny_dataset();
  auto cfg = kTargetConfig;
  cfg["lr"] = 3e-3;
  const auto out = temp_dir("target");
  auto r = tr::train_continuous(d, runs().vae, options(out, 30, cfg, &log));
  ASSERT_TRUE(r.finished);
  expect_finite_and_falling(r.losses);
  EXPECT_GT(r.metrics["train"]["mse"].get<double>(), 0.0);
  EXPECT_TRUE(r.metrics.contains("val"));
  const auto run = tr::load_continuous_run(out);
  EXPECT_EQ(run.config.token_dim(), 3);
  EXPECT_EQ(run.config.backbone.image_tokens(), 16);
  EXPECT_EQ(run.vocab.size(), run.config.backbone.num_words);
  // Sampling's bound on x0 is the training tokens' largest |number|, rounded up to a tenth.
  const auto tokens = adtree::io::SafetensorsReader(out + "/tokens.safetensors").tensor("tokens");
  const double top = tokens.abs().max().item<double>();
  EXPECT_GE(run.config.x0_bound, top);
  EXPECT_LT(run.config.x0_bound, top + 0.1 + 1e-9);
  auto j = run.config.to_json();
  EXPECT_EQ(adtree::model::ContinuousConfig::from_json(j).x0_bound, run.config.x0_bound);
  j["x0_bound"] = -1;
  EXPECT_THROW(adtree::model::ContinuousConfig::from_json(j), adtree::Error);
  j["x0_bound"] = "big";
  EXPECT_THROW(adtree::model::ContinuousConfig::from_json(j), adtree::Error);
  // A run finished before the bound was recorded gets it from its tokens when it loads.
  auto old = adtree::train::read_json_file(out + "/run.json");
  old["model"].erase("x0_bound");
  adtree::train::write_json_file(out + "/run.json", old);
  EXPECT_EQ(tr::load_continuous_run(out).config.x0_bound, run.config.x0_bound);
}

TEST(TrainContinuous, ResumeReproducesTheUninterruptedRun) {
  const auto d = tiny_dataset();
  const auto vae = runs().vae;
  expect_exact_resume("continuous", 6, kTargetConfig,
                      [&](const tr::TrainOptions& o) { return tr::train_continuous(d, vae, o); });
}

TEST(TrainContinuous, BadInputsAreClearErrors) {
  std::ostringstream log;
  const auto d = tiny_dataset();
  auto bad = kTargetConfig;
  bad["diffusion_batch_mul"] = 0;
  EXPECT_NE(error_of([&] {
              tr::train_continuous(d, runs().vae, options(temp_dir("a"), 2, bad, &log));
            }).find("diffusion_batch_mul"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              tr::train_continuous(d, temp_dir("empty"),
                                   options(temp_dir("b"), 2, kTargetConfig, &log));
            }).find("vae.safetensors"),
            std::string::npos);
}

TEST(AssembleContinuous, TheDirectoryLoadsAndDrawsWithArAndCspd) {
  const auto dir = assembled("model");
  ASSERT_TRUE(adtree::model::is_continuous_dir(dir));
  const auto m = adtree::model::load_continuous_dir(dir);
  ASSERT_TRUE(m.has_draft());
  for (auto method : {adtree::decode::Method::Ar, adtree::decode::Method::Cspd}) {
    auto r = adtree::decode::default_continuous_request(m, method);
    r.seed = 3;
    const auto res = adtree::decode::run_continuous(m, "red square top left noto", r);
    EXPECT_EQ(res.tokens.sizes(), (std::vector<int64_t>{16, 3}));
    const auto rgb = m.picture(res.tokens);
    EXPECT_EQ(rgb.sizes(), (std::vector<int64_t>{8, 8, 3}));
    if (method == adtree::decode::Method::Cspd) {
      EXPECT_GT(res.drafted, 0);
    }
  }
  // Provenance names the run folders as the command gave them (no absolute path of the training
  // machine ships in a model directory).
  const auto& prov = m.manifest.at("provenance");
  EXPECT_EQ(prov.at("target").at("run"), runs().target);
  EXPECT_EQ(prov.at("vae").at("run"), runs().vae);
}

// The token colours (model/continuous/token_colours.h) are fitted on the training tokens' decodes:
// on those cells the map beats one flat colour (least squares with a constant term cannot do
// worse), and a map read in the wrong layout does not.
TEST(AssembleContinuous, TokenColoursFitTheDecodedTrainingCells) {
  const auto m = adtree::model::load_continuous_dir(assembled("model"));
  const int64_t dim = m.target->config().token_dim();
  ASSERT_EQ(int64_t(m.token_colours.size()), (dim + 1) * 3);
  const auto grid = adtree::io::SafetensorsReader(runs().target + "/tokens.safetensors")
                        .tensor("tokens")[0]
                        .to(at::kFloat)
                        .contiguous();
  const auto& g = m.target->config().backbone;
  const int64_t f = m.vae->config().downsample_factor();
  const auto truth = m.picture(grid)
                         .to(at::kFloat)
                         .reshape({g.grid_h, f, g.grid_w, f, 3})
                         .mean({1, 3})
                         .reshape({-1, 3});
  auto error = [&](const std::vector<float>& map) {
    double e = 0;
    for (int64_t i = 0; i < grid.size(0); ++i) {
      const auto c = adtree::model::token_colour(map, grid[i].data_ptr<float>(), dim);
      for (int k = 0; k < 3; ++k) e += std::abs(double(c[size_t(k)]) - truth[i][k].item<double>());
    }
    return e;
  };
  double flat = 0;
  const auto mean = truth.mean(0);
  for (int64_t i = 0; i < grid.size(0); ++i)
    for (int k = 0; k < 3; ++k)
      flat += std::abs(mean[k].item<double>() - truth[i][k].item<double>());
  std::vector<float> transposed(m.token_colours.size());
  for (int64_t r = 0; r <= dim; ++r)
    for (int64_t c = 0; c < 3; ++c)
      transposed[size_t(c * (dim + 1) + r)] = m.token_colours[size_t(r * 3 + c)];
  EXPECT_LT(error(m.token_colours), flat);
  EXPECT_GT(error(transposed), error(m.token_colours));
}

TEST(AssembleContinuous, RequestsThisFamilyCannotRunAreRefusedByName) {
  const auto m = adtree::model::load_continuous_dir(assembled("model"));
  auto req = [&](adtree::decode::Method method) {
    return adtree::decode::default_continuous_request(m, method);
  };
  auto message = [&](const adtree::decode::DecodeRequest& r, const std::string& prompt) {
    return error_of([&] { adtree::decode::run_continuous(m, prompt, r); });
  };
  const std::string ok = "red square noto";
  EXPECT_NE(message(req(adtree::decode::Method::Adt), ok).find("runs on VQ codes"),
            std::string::npos);
  auto greedy = req(adtree::decode::Method::Ar);
  greedy.sampling.temperature = 0;
  EXPECT_NE(message(greedy, ok).find("temperature"), std::string::npos);
  auto topk = req(adtree::decode::Method::Ar);
  topk.sampling.top_k = 5;
  EXPECT_NE(message(topk, ok).find("top-k"), std::string::npos);
  EXPECT_NE(message(req(adtree::decode::Method::Ar), "red zebra").find("zebra"), std::string::npos);
  const auto no_draft = adtree::model::load_continuous_dir(assembled("target_only", false));
  EXPECT_NE(error_of([&] {
              adtree::decode::run_continuous(no_draft, ok, req(adtree::decode::Method::Cspd));
            }).find("draft"),
            std::string::npos);
}

// The card chooses the shipped defaults (what docs/cspd.md measured); the loader checks them, so a
// bad choice fails the assembly rather than the user's first run.
TEST(AssembleContinuous, TheCardSetsTheSamplingAndCspdDefaults) {
  const nlohmann::json card = {{"sampling", {{"head_variance", "fixed"}, {"cfg", 2.5}}},
                               {"cspd", {{"inner_temperature", 50.0}, {"gamma", 2}}},
                               {"license", {{"weights", "CC-BY-4.0"}}}};
  const auto m = adtree::model::load_continuous_dir(assembled("card", true, card));
  EXPECT_TRUE(m.default_fixed_variance());
  EXPECT_EQ(m.default_cfg(), 2.5);
  EXPECT_EQ(m.default_temperature(), 1.0);  // the assembler's default stands where not set
  EXPECT_EQ(m.default_inner_temperature(), 50.0);
  EXPECT_EQ(m.manifest["cspd"]["gamma"].get<int>(), 2);
  EXPECT_EQ(m.manifest["cspd"]["prefill_ratio"].get<double>(), 0.05);
  EXPECT_EQ(m.manifest["license"]["weights"], "CC-BY-4.0");
  EXPECT_NE(error_of([&] {
              assembled("bad-card", true, {{"cspd", 3}});
            }).find("\"cspd\""),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              assembled("bad-default", true, {{"sampling", {{"head_variance", "wide"}}}});
            }).find("head_variance"),
            std::string::npos);
}

TEST(AssembleContinuous, DamagedDirectoriesAreClearErrors) {
  const auto dir = assembled("damaged");
  // A missing draft file.
  fs::remove(dir + "/draft.safetensors");
  EXPECT_NE(error_of([&] { adtree::model::load_continuous_dir(dir); }).find("draft.safetensors"),
            std::string::npos);
  // A non-finite weight in the target.
  const auto dir2 = assembled("nan");
  {
    auto w = adtree::io::SafetensorsReader(dir2 + "/target.safetensors").all();
    w.begin()->second.view(-1)[0] = NAN;
    adtree::io::write_safetensors(dir2 + "/target.safetensors", w);
  }
  EXPECT_NE(error_of([&] { adtree::model::load_continuous_dir(dir2); }).find("target.safetensors"),
            std::string::npos);
  // model.json of another family, or broken.
  const auto dir3 = assembled("family");
  { std::ofstream(dir3 + "/model.json") << "{\"family\": \"llamagen\"}"; }
  EXPECT_FALSE(adtree::model::is_continuous_dir(dir3));
  EXPECT_NE(error_of([&] { adtree::model::load_continuous_dir(dir3); }).find("continuous"),
            std::string::npos);
  { std::ofstream(dir3 + "/model.json") << "{not json"; }
  EXPECT_NE(error_of([&] { adtree::model::load_continuous_dir(dir3); }).find("model.json"),
            std::string::npos);
  // Token colours of the wrong size, or not finite.
  const auto dir5 = assembled("colours");
  auto mc = adtree::train::read_json_file(dir5 + "/model.json");
  mc["token_colours"] = {1.0, 2.0};
  adtree::train::write_json_file(dir5 + "/model.json", mc);
  EXPECT_NE(error_of([&] { adtree::model::load_continuous_dir(dir5); }).find("token_colours"),
            std::string::npos);
  mc["token_colours"] = std::vector<double>(12, 0.0);
  mc["token_colours"][5] = "x";
  adtree::train::write_json_file(dir5 + "/model.json", mc);
  EXPECT_NE(error_of([&] { adtree::model::load_continuous_dir(dir5); }).find("finite"),
            std::string::npos);
  // A sampling default the family does not know.
  const auto dir4 = assembled("variance");
  auto m = adtree::train::read_json_file(dir4 + "/model.json");
  m["sampling"]["head_variance"] = "wide";
  adtree::train::write_json_file(dir4 + "/model.json", m);
  EXPECT_NE(error_of([&] { adtree::model::load_continuous_dir(dir4); }).find("head_variance"),
            std::string::npos);
}

// The hybrid loss against the schedule's own reverse step (model/continuous/diffusion_schedule.h)
// and the Gaussian KL written out: MSE of epsilon plus, in bits per dimension, the KL from the true
// posterior at t > 0 and the Gaussian NLL of x0 at t = 0.
TEST(DiffusionLoss, IsTheEpsilonMsePlusTheVariationalBoundInBits) {
  namespace m = adtree::model;
  m::DiffusionHeadConfig c;
  c.token_dim = 2, c.cond_dim = 4, c.width = 8, c.blocks = 1, c.freq_dim = 8;
  auto w = m::init_params(m::diffusion_head_param_specs(c), 3);
  auto gen = at::detail::createCPUGenerator(2);
  for (auto& [k, t] : w) t.normal_(0.0, 0.3, gen);
  const m::DiffusionHead head(c, w);
  const int T = 50;
  const auto x0 = at::randn({3, 2}, gen), z = at::randn({3, 4}, gen),
             noise = at::randn({3, 2}, gen);
  const auto t = at::tensor(std::vector<int64_t>{0, 7, 41});
  const auto got = tr::diffusion_loss(head, T, x0, z, t, noise);

  const m::DiffusionSchedule s(T, T);
  double mse = 0, vb = 0;
  for (int64_t i = 0; i < 3; ++i) {
    const int k = int(t[i].item<int64_t>());
    std::vector<float> x0v(2), nv(2), xt(2), mean(2), log_std(2);
    for (int d = 0; d < 2; ++d) x0v[d] = x0[i][d].item<float>(), nv[d] = noise[i][d].item<float>();
    s.add_noise(k, x0v.data(), nv.data(), 2, xt.data());
    const auto out =
        head.forward(at::tensor(xt).view({1, 2}), t.narrow(0, i, 1), z.narrow(0, i, 1));
    std::vector<float> eps{out[0][0].item<float>(), out[0][1].item<float>()};
    std::vector<float> v{out[0][2].item<float>(), out[0][3].item<float>()};
    s.reverse_step(k, xt.data(), eps.data(), v.data(), 2, mean.data(), log_std.data());
    const double ab = s.alpha_bar(k), ab_prev = k == 0 ? 1.0 : s.alpha_bar(k - 1), b = s.beta(k);
    for (int d = 0; d < 2; ++d) {
      mse += std::pow(double(eps[d]) - nv[d], 2) / 6.0;
      const double lv = 2.0 * log_std[d];
      double term;
      if (k == 0) {
        term = 0.5 * (std::log(2 * M_PI) + lv + std::pow(x0v[d] - mean[d], 2) * std::exp(-lv));
      } else {
        const double tm = std::sqrt(ab_prev) * b / (1 - ab) * x0v[d] +
                          std::sqrt(1 - b) * (1 - ab_prev) / (1 - ab) * xt[d];
        const double tlv = s.posterior_log_variance(k);
        term = 0.5 *
               (-1.0 + lv - tlv + std::exp(tlv - lv) + std::pow(tm - mean[d], 2) * std::exp(-lv));
      }
      vb += term / std::log(2.0) / 6.0;
    }
  }
  EXPECT_NEAR(got.mse, mse, 1e-5);
  EXPECT_NEAR(got.vb, vb, 1e-4 * std::max(1.0, std::abs(vb)));
  EXPECT_NEAR(got.total.item<double>(), mse + vb, 1e-4 * std::max(1.0, std::abs(vb)));
}

// bf16 products (--matmul bf16, as the shipped runs train): the step runs, its losses track the
// fp32 run's (the head's norms stay fp32 whatever dtype its products come back in).
TEST(TrainContinuous, Bf16ProductsTrackTheFp32Run) {
  std::ostringstream log;
  const auto d = tiny_dataset();
  auto fp32 = options(temp_dir("fp32"), 4, kTargetConfig, &log);
  auto bf16 = options(temp_dir("bf16"), 4, kTargetConfig, &log);
  fp32.matmul = "fp32";
  bf16.matmul = "bf16";
  const auto a = tr::train_continuous(d, runs().vae, fp32);
  const auto b = tr::train_continuous(d, runs().vae, bf16);
  ASSERT_EQ(a.losses.size(), b.losses.size());
  for (size_t i = 0; i < a.losses.size(); ++i) {
    EXPECT_TRUE(std::isfinite(b.losses[i]));
    EXPECT_NEAR(b.losses[i], a.losses[i], 0.05 * std::abs(a.losses[i]) + 1e-3) << "step " << i;
  }
}

// The fidelity check of the family on the tiny model: AR and CSpD on the same prompts and seeds,
// pixel and token space scored, and the distance between two sets of pictures.
TEST(ContinuousFidelity, ScoresBothMethodsAndMeasuresTheirDistance) {
  const auto m = adtree::model::load_continuous_dir(assembled("model"));
  const auto d = tiny_dataset();
  tr::FidelityOptions o;
  o.prompts = 3;
  const auto tokens =
      adtree::io::SafetensorsReader(runs().target + "/tokens.safetensors").tensor("tokens");
  const auto ar = tr::continuous_fidelity(
      m, d, o, adtree::decode::default_continuous_request(m, adtree::decode::Method::Ar), tokens,
      nullptr);
  const auto sd = tr::continuous_fidelity(
      m, d, o, adtree::decode::default_continuous_request(m, adtree::decode::Method::Cspd), tokens,
      nullptr);
  EXPECT_EQ(ar.metrics["prompts"].get<int64_t>(), 3);
  for (const char* space : {"pixel", "tokens"}) {
    const double t1 = ar.metrics[space]["emoji_top1"].get<double>();
    EXPECT_GE(t1, 0.0);
    EXPECT_LE(t1, 1.0);
  }
  EXPECT_TRUE(sd.metrics.contains("acceptance"));
  EXPECT_EQ(sd.images.sizes(), ar.images.sizes());
  // The sheets' partner of each picture is its nearest training picture in pixels.
  ASSERT_EQ(ar.nearest.sizes(), ar.images.sizes());
  const auto train = d.images.index_select(
      0, at::tensor(d.indices(adtree::io::Split::Train), at::TensorOptions().dtype(at::kLong)));
  for (int64_t i = 0; i < ar.images.size(0); ++i) {
    const auto img = ar.images[i].to(at::kDouble);
    const auto all = (train.to(at::kDouble) - img).pow(2).sum({1, 2, 3});
    const double to_nearest = (ar.nearest[i].to(at::kDouble) - img).pow(2).sum().item<double>();
    EXPECT_EQ(to_nearest, all.min().item<double>()) << "prompt " << i;
  }
  const auto same = tr::picture_distance(ar.images, ar.images);
  EXPECT_EQ(same["mean_abs_pixel"].get<double>(), 0.0);
  EXPECT_EQ(same["identical_share"].get<double>(), 1.0);
  const auto other = tr::picture_distance(ar.images, 255 - ar.images);
  EXPECT_GT(other["mean_abs_pixel"].get<double>(), 0.0);
  EXPECT_EQ(other["identical_share"].get<double>(), 0.0);
  // The scale of CSpD's distance: AR on the same prompts at other seeds draws other pictures.
  const auto again = tr::continuous_fidelity(
      m, d, o,
      tr::other_seeds(adtree::decode::default_continuous_request(m, adtree::decode::Method::Ar)),
      tokens, nullptr);
  EXPECT_EQ(again.prompts, ar.prompts);
  const auto scale = tr::distance_from_ar(ar, again);
  EXPECT_GT(scale["mean_abs_pixel"].get<double>(), 0.0);
  EXPECT_LT(scale["identical_share"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(scale["emoji_top1_difference"].get<double>(),
                   again.metrics["pixel"]["emoji_top1"].get<double>() -
                       ar.metrics["pixel"]["emoji_top1"].get<double>());
  EXPECT_EQ(tr::distance_from_ar(ar, ar)["emoji_top1_difference"].get<double>(), 0.0);
}
