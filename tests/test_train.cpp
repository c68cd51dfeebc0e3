// The training pipeline on a handful of synthetic 8x8 pictures: shared pieces (config
// merging, schedule, data order, AdamW, clipping), each trainer for a few steps (finite, falling
// loss), exact resume from a checkpoint, clear errors for bad data and configs, and the assembled
// model directory loading through the product's loader.
#include <gtest/gtest.h>
#include <unistd.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <unordered_set>

#include "error_of.h"
#include "io/dataset.h"
#include "io/manifest.h"
#include "io/safetensors.h"
#include "io/safetensors_shards.h"
#include "model/model_dir.h"
#include "train/assemble.h"
#include "train/captions.h"
#include "train/common.h"
#include "train/drafter_trainer.h"
#include "train/fidelity.h"
#include "train/gpt_trainer.h"
#include "train/vq_trainer.h"
#include "train/word_vectors.h"
#include "train_fixture.h"
#include "util/error.h"

using adtree::testing::error_of;

namespace {

const json kVqConfig = {{"codebook_size", 16}, {"codebook_dim", 4},    {"ch", 8},
                        {"ch_mult", {1, 2}},   {"z_channels", 8},      {"num_res_blocks", 1},
                        {"norm_groups", 4},    {"warmup", 0},          {"restart_every", 3},
                        {"eval_every", 0},     {"checkpoint_every", 0}};
const json kGptConfig = {{"dim", 32},     {"n_layer", 2},    {"n_head", 2},
                         {"cap_dim", 16}, {"cond_len", 6},   {"multiple_of", 32},
                         {"warmup", 0},   {"eval_every", 0}, {"checkpoint_every", 0},
                         {"dropout", 0.0}};
const json kDrafterConfig = {{"warmup", 0},       {"eval_every", 0},        {"checkpoint_every", 0},
                             {"self_samples", 4}, {"self_eval_samples", 2}, {"sample_batch", 3}};

}  // namespace

// ---- shared pieces
// --------------------------------------------------------------------------------

TEST(TrainCommon, ConfigRejectsUnknownKeysAndWrongTypes) {
  const json d = {{"lr", 0.1}, {"steps", 10}, {"schedule", "cosine"}};
  EXPECT_EQ(tr::merge_config(d, {{"lr", 1}}, "x")["lr"], 1);
  EXPECT_NE(error_of([&] {
              tr::merge_config(d, {{"lrr", 0.1}}, "x");
            }).find("unknown configuration key 'lrr'"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              tr::merge_config(d, {{"steps", 1.5}}, "x");
            }).find("integer"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              tr::merge_config(d, {{"schedule", 3}}, "x");
            }).find("schedule"),
            std::string::npos);
  EXPECT_NE(error_of([] { tr::parse_config_arg("{not json"); }).find("invalid JSON"),
            std::string::npos);
}

TEST(TrainCommon, ScheduleWarmsUpThenDecaysToTheFloor) {
  tr::LrSchedule s{1.0, 10, 110, 0.1, "cosine"};
  EXPECT_NEAR(s.at(0), 0.1, 1e-12);
  EXPECT_NEAR(s.at(9), 1.0, 1e-12);
  EXPECT_NEAR(s.at(10), 1.0, 1e-12);
  EXPECT_NEAR(s.at(60), 0.55, 1e-12);
  EXPECT_NEAR(s.at(110), 0.1, 1e-12);
  s.shape = "linear";
  EXPECT_NEAR(s.at(60), 0.55, 1e-12);
  s.shape = "bogus";
  EXPECT_THROW(s.validate("x"), adtree::Error);
}

TEST(TrainCommon, BatchOrderIsAPureFunctionOfSeedAndStep) {
  std::vector<int64_t> rows{3, 5, 7, 9, 11};
  tr::BatchOrder a(rows, 2, 1), b(rows, 2, 1), c(rows, 2, 2);
  std::multiset<int64_t> epoch0;
  for (int64_t s = 0; s < 5; ++s) {
    auto r = a.rows_for_step(s);
    EXPECT_EQ(r, b.rows_for_step(s));
    if (s < 2) epoch0.insert(r.begin(), r.end());
  }
  // Asked out of order, the same answer.
  EXPECT_EQ(a.rows_for_step(1), tr::BatchOrder(rows, 2, 1).rows_for_step(1));
  // Rows 0..4 of the endless sequence are one permutation of the rows.
  auto r2 = a.rows_for_step(2);
  epoch0.insert(r2[0]);
  EXPECT_EQ(epoch0, std::multiset<int64_t>(rows.begin(), rows.end()));
  bool differs = false;
  for (int64_t s = 0; s < 5; ++s) differs |= a.rows_for_step(s) != c.rows_for_step(s);
  EXPECT_TRUE(differs);
}

TEST(TrainCommon, AdamWMatchesTheReferenceUpdateAndDecaysMatricesOnly) {
  tr::Params p = tr::Params::from({{"w", at::full({2, 2}, 1.0)}, {"b", at::full({2}, 1.0)}});
  tr::AdamW opt(p, {0.1, 0.9, 0.95, 1e-8, 0.5});
  (p.tensors["w"].sum() * 2.0 + p.tensors["b"].sum() * 2.0).backward();
  opt.step(0.1);
  // First step: m_hat = g, v_hat = g^2 -> update lr * g / |g| = 0.1; decay only on w: 1 * 0.05.
  EXPECT_NEAR(p.tensors["w"][0][0].item<double>(), 1.0 - 0.05 - 0.1, 1e-6);
  EXPECT_NEAR(p.tensors["b"][0].item<double>(), 1.0 - 0.1, 1e-6);
  // Clipping scales the global norm down to the limit.
  p.zero_grad();
  (p.tensors["w"].sum() * 3.0).backward();
  EXPECT_NEAR(tr::clip_grad_norm(p, 1.0), 6.0, 1e-6);
  EXPECT_NEAR(p.tensors["w"].grad().norm().item<double>(), 1.0, 1e-5);
}

TEST(TrainCommon, CaptionsAreLeftPaddedAndUnknownWordsCounted) {
  auto d = tiny_dataset();
  auto vocab = tr::build_vocabulary(d, d.indices(adtree::io::Split::Train));
  auto c = tr::caption_ids(d, vocab, 6);
  EXPECT_EQ(c.ids.size(1), 6);
  EXPECT_EQ(c.ids[0][0].item<int64_t>(), -1);  // "red square top left noto": 5 words, 1 pad
  EXPECT_GE(c.ids[0][1].item<int64_t>(), 0);
  EXPECT_NE(error_of([&] { tr::caption_ids(d, vocab, 3); }).find("raise cond_len"),
            std::string::npos);
}

// ---- trainers -----------------------------------------------------------------------------------

TEST(TrainVq, LossFallsAndRunFolderIsComplete) {
  std::ostringstream log;
  const auto d = tiny_dataset();
  auto cfg = kVqConfig;
  cfg["lr"] = 3e-3;
  const auto out = temp_dir("vq");
  auto r = tr::train_vq(d, options(out, 24, cfg, &log));
  ASSERT_TRUE(r.finished);
  expect_finite_and_falling(r.losses);
  for (const char* f : {"vq.safetensors", "run.json", "metrics.jsonl", "checkpoint.safetensors"}) {
    EXPECT_TRUE(fs::exists(out + "/" + f)) << f;
  }
  EXPECT_GT(r.metrics["psnr_db"].get<double>(), 0.0);
  EXPECT_GT(r.metrics["codes_used"].get<int64_t>(), 0);
  EXPECT_NE(log.str().find("img/s ETA"), std::string::npos);  // the progress line
  const auto vq = tr::load_vq(out);
  EXPECT_EQ(tr::encode_rows(vq, d, {0, 1}).sizes(), (std::vector<int64_t>{2, 16}));
}

TEST(TrainVq, ResumeReproducesTheUninterruptedRun) {
  const auto d = tiny_dataset();
  expect_exact_resume("vq", 8, kVqConfig,
                      [&](const tr::TrainOptions& o) { return tr::train_vq(d, o); });
}

TEST(TrainVq, BadDataAndConfigAreClearErrors) {
  std::ostringstream log;
  auto d = tiny_dataset();
  const auto out = temp_dir("bad");
  auto cfg = kVqConfig;
  cfg["ch_mult"] = {1, 2, 2, 2, 2};  // 16x downsampling of 8x8 pictures
  EXPECT_NE(error_of([&] { tr::train_vq(d, options(out, 2, cfg, &log)); }).find("not a multiple"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              tr::train_vq(d, options(out, 2, {{"codebook_sise", 3}}, &log));
            }).find("unknown configuration key"),
            std::string::npos);
  auto bad_groups = kVqConfig;
  bad_groups["norm_groups"] = 3;
  EXPECT_NE(
      error_of([&] { tr::train_vq(d, options(out, 2, bad_groups, &log)); }).find("norm_groups"),
      std::string::npos);
  auto no_train = d;
  for (auto& s : no_train.split) s = 1;
  EXPECT_NE(error_of([&] {
              tr::train_vq(no_train, options(out, 2, kVqConfig, &log));
            }).find("no train images"),
            std::string::npos);
  auto broken = d;
  broken.captions.pop_back();
  EXPECT_NE(
      error_of([&] { tr::train_vq(broken, options(out, 2, kVqConfig, &log)); }).find("captions"),
      std::string::npos);
  auto resume = options(temp_dir("empty"), 2, kVqConfig, &log);
  resume.resume = true;
  EXPECT_NE(error_of([&] { tr::train_vq(d, resume); }).find("no checkpoint"), std::string::npos);
}

namespace {
// A finished VQ run for the GPT tests (a few steps: the codes only need to exist).
std::string vq_run(const adtree::io::Dataset& d, std::ostream* log) {
  const auto out = temp_dir("vqrun");
  tr::train_vq(d, options(out, 4, kVqConfig, log));
  return out;
}
std::string gpt_run(const adtree::io::Dataset& d, const std::string& vq, std::ostream* log) {
  const auto out = temp_dir("gptrun");
  auto cfg = kGptConfig;
  cfg["lr"] = 3e-3;
  tr::train_gpt(d, vq, options(out, 12, cfg, log));
  return out;
}
}  // namespace

TEST(TrainGpt, LossFallsAndReportsHeldOutAndBaselines) {
  std::ostringstream log;
  const auto d = tiny_dataset();
  const auto vq = vq_run(d, &log);
  auto cfg = kGptConfig;
  cfg["lr"] = 3e-3;
  const auto out = temp_dir("gpt");
  auto r = tr::train_gpt(d, vq, options(out, 16, cfg, &log));
  ASSERT_TRUE(r.finished);
  expect_finite_and_falling(r.losses);
  for (const char* k :
       {"train_nats", "val_nats", "val_uncond_nats", "unigram_val_nats", "uniform_nats"}) {
    ASSERT_TRUE(r.metrics.contains(k)) << k;
    EXPECT_TRUE(std::isfinite(r.metrics[k].get<double>())) << k;
  }
  auto run = tr::load_gpt_run(out);
  EXPECT_EQ(run.vocab.size(), run.config.num_words);
  EXPECT_EQ(run.tokens.size(0), d.size());
  EXPECT_NE(log.str().find("tok/s ETA"), std::string::npos);
  // The second run on the same VQ reuses the cached codes.
  std::ostringstream log2;
  tr::train_gpt(d, vq, options(out, 1, cfg, &log2));
  EXPECT_NE(log2.str().find("using cached VQ codes"), std::string::npos);
}

// A codes dataset (`adtree data codes`) trains the GPT and the draft head exactly as the pictures
// do, at a fraction of the size; a VQ other than the one that made the codes, and the trainers
// that need pictures, are clear errors.
TEST(TrainGpt, CodesDatasetTrainsLikeThePictures) {
  std::ostringstream log;
  const auto d = tiny_dataset();
  const auto vq = vq_run(d, &log);
  const auto codes = tr::encode_dataset(d, tr::load_vq(vq), log);
  EXPECT_FALSE(codes.has_images());
  EXPECT_EQ(codes.codes.sizes(), (std::vector<int64_t>{d.size(), 4, 4}));  // 8 x 8, factor 2
  EXPECT_EQ(codes.captions, d.captions);
  EXPECT_EQ(codes.split, d.split);
  const auto file = temp_dir("codes") + "/codes.safetensors";
  codes.save(file);
  const auto back = adtree::io::Dataset::load(file);
  auto cfg = kGptConfig;
  cfg["lr"] = 3e-3;
  auto pictures = tr::train_gpt(d, vq, options(temp_dir("gpt_pictures"), 8, cfg, &log));
  const auto out = temp_dir("gpt_codes");
  auto from_codes = tr::train_gpt(back, vq, options(out, 8, cfg, &log));
  EXPECT_EQ(from_codes.losses, pictures.losses);
  EXPECT_EQ(tr::load_gpt_run(out).tokens.sizes(), (std::vector<int64_t>{d.size(), 16}));
  auto head =
      tr::train_drafter(back, out, options(temp_dir("drafter_codes"), 4, kDrafterConfig, &log));
  EXPECT_TRUE(head.finished);
  // Another VQ (a run with another seed) did not make these codes.
  auto vcfg = kVqConfig;
  const auto other = temp_dir("vq_other");
  tr::train_vq(d, [&] {
    auto o = options(other, 4, vcfg, &log);
    o.seed = 9;
    return o;
  }());
  EXPECT_NE(error_of([&] {
              tr::train_gpt(back, other, options(temp_dir("g2"), 2, cfg, &log));
            }).find("made with another VQ"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              tr::train_vq(back, options(temp_dir("v2"), 2, kVqConfig, &log));
            }).find("needs the pictures"),
            std::string::npos);
  EXPECT_NE(error_of([&] { tr::encode_dataset(back, tr::load_vq(vq), log); })
                .find("needs the "
                      "pictures"),
            std::string::npos);
}

TEST(TrainGpt, ResumeReproducesTheUninterruptedRun) {
  std::ostringstream log;
  const auto d = tiny_dataset();
  const auto vq = vq_run(d, &log);
  auto cfg = kGptConfig;
  cfg["dropout"] = 0.1;  // dropout masks, caption dropout and token noise must replay too
  cfg["token_noise"] = 0.2;
  for (const std::string matmul : {"fp32", "bf16"}) {  // bf16 autocast rounds the same way too
    expect_exact_resume("gpt_" + matmul, 8, cfg, [&](tr::TrainOptions o) {
      o.matmul = matmul;
      return tr::train_gpt(d, vq, o);
    });
  }
}

TEST(TrainGpt, BadInputsAreClearErrors) {
  std::ostringstream log;
  const auto d = tiny_dataset();
  const auto vq = vq_run(d, &log);
  const auto out = temp_dir("bad");
  auto short_cond = kGptConfig;
  short_cond["cond_len"] = 3;
  EXPECT_NE(error_of([&] {
              tr::train_gpt(d, vq, options(out, 2, short_cond, &log));
            }).find("raise cond_len"),
            std::string::npos);
  auto bad_heads = kGptConfig;
  bad_heads["n_head"] = 3;
  EXPECT_NE(
      error_of([&] { tr::train_gpt(d, vq, options(out, 2, bad_heads, &log)); }).find("n_head"),
      std::string::npos);
  EXPECT_NE(error_of([&] {
              tr::train_gpt(d, out + "/nowhere", options(out, 2, kGptConfig, &log));
            }).find("no vq.safetensors"),
            std::string::npos);
  // Resuming under another config would silently train another model.
  const auto run = temp_dir("cfg");
  auto a = options(run, 4, kGptConfig, &log);
  a.stop_at = 2;
  tr::train_gpt(d, vq, a);
  auto other = kGptConfig;
  other["caption_dropout"] = 0.5;
  auto b = options(run, 4, other, &log);
  b.resume = true;
  EXPECT_NE(error_of([&] { tr::train_gpt(d, vq, b); }).find("another configuration"),
            std::string::npos);
  // The matrix precision is checked before anything runs, on any device.
  auto m = options(temp_dir("matmul"), 2, kGptConfig, &log);
  m.matmul = "fp16";
  EXPECT_NE(error_of([&] { tr::train_gpt(d, vq, m); }).find("--matmul must be fp32, tf32 or bf16"),
            std::string::npos);
}

TEST(TrainGpt, TokenNoiseCorruptsInputsOnlyAndEveryEvalReportsTheCaptionShare) {
  std::ostringstream log;
  const auto d = tiny_dataset();
  const auto vq = vq_run(d, &log);
  auto cfg = kGptConfig;
  cfg["eval_every"] = 2;
  auto plain = tr::train_gpt(d, vq, options(temp_dir("noise0"), 3, cfg, &log));
  cfg["token_noise"] = 0.0;  // the default: the same run, loss for loss
  auto zero = tr::train_gpt(d, vq, options(temp_dir("noise00"), 3, cfg, &log));
  cfg["token_noise"] = 0.5;
  const auto noisy_dir = temp_dir("noise5");
  auto noisy = tr::train_gpt(d, vq, options(noisy_dir, 3, cfg, &log));
  ASSERT_EQ(plain.losses.size(), 3u);
  EXPECT_EQ(plain.losses, zero.losses);
  // Same seed, batches and start; only the input codes differ. The first loss cannot show it (the
  // output head starts at zero: a uniform guess whatever the inputs), the later ones must.
  EXPECT_EQ(plain.losses[0], noisy.losses[0]);
  EXPECT_NE(plain.losses[2], noisy.losses[2]);
  for (double l : noisy.losses) EXPECT_TRUE(std::isfinite(l));
  // The evals measure clean teacher forcing: the mid-run one carries the null-caption loss.
  std::ifstream metrics(noisy_dir + "/metrics.jsonl");
  std::string line;
  bool mid_eval = false;
  while (std::getline(metrics, line)) {
    auto j = json::parse(line);
    if (j.contains("eval") && j.value("step", 0) == 2) {
      mid_eval = true;
      EXPECT_TRUE(j["eval"].contains("train_uncond_nats"));
    }
  }
  EXPECT_TRUE(mid_eval);
  cfg["token_noise"] = 1.0;
  EXPECT_NE(error_of([&] {
              tr::train_gpt(d, vq, options(temp_dir("noise1"), 2, cfg, &log));
            }).find("token_noise must be in [0, 1)"),
            std::string::npos);
}

TEST(TrainGpt, SecondStageStartsFromAFinishedRunAndRefusesAnotherArchitecture) {
  std::ostringstream log;
  const auto d = tiny_dataset();
  const auto vq = vq_run(d, &log);
  const auto first = gpt_run(d, vq, &log);
  const auto first_run = tr::load_gpt_run(first);
  // Zero steps of learning (lr ~ 0): the second stage's weights are exactly the first run's.
  auto cfg = kGptConfig;
  cfg["lr"] = 1e-12;
  auto o = options(temp_dir("stage2"), 2, cfg, &log);
  o.init_from = first;
  ASSERT_TRUE(tr::train_gpt(d, vq, o).finished);
  const auto second = tr::load_gpt_run(o.out);
  for (const auto& [name, t] : first_run.weights) {
    EXPECT_TRUE(at::allclose(second.weights.at(name), t, 1e-5, 1e-6)) << name;
  }
  EXPECT_NE(log.str().find("starting from the weights of"), std::string::npos);
  // Another architecture cannot start from these weights.
  auto wider = kGptConfig;
  wider["dim"] = kGptConfig["dim"].get<int64_t>() * 2;
  auto w = options(temp_dir("stage2wide"), 2, wider, &log);
  w.init_from = first;
  EXPECT_NE(error_of([&] { tr::train_gpt(d, vq, w); }).find("another architecture"),
            std::string::npos);
  auto missing = options(temp_dir("stage2missing"), 2, kGptConfig, &log);
  missing.init_from = temp_dir("nothing");
  EXPECT_NE(error_of([&] { tr::train_gpt(d, vq, missing); }).find("not a finished"),
            std::string::npos);
}

namespace {
// A vector of `dim` numbers that differs per word: i-th entry = seed + i / 10.
std::vector<float> test_vector(float seed, int64_t dim) {
  std::vector<float> v(static_cast<size_t>(dim));
  for (int64_t i = 0; i < dim; ++i) v[size_t(i)] = seed + float(i) / 10.0f;
  return v;
}
std::string write_file(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  return path;
}
std::string glove_line(const std::string& word, const std::vector<float>& v) {
  std::ostringstream s;
  s << word;
  for (float x : v) s << ' ' << x;
  return s.str() + "\n";
}
}  // namespace

TEST(TrainWordVectors, ReadsGloveTextAndWinkJsonKeepingOnlyTheWantedWords) {
  const auto dir = temp_dir("wv");
  const auto glove = write_file(dir + "/v.txt", glove_line("red", test_vector(1, 4)) +
                                                    glove_line("zebra", test_vector(2, 4)) +
                                                    glove_line("left", test_vector(-3, 4)));
  // wink layout: the words list, vectors with two extra fields (norm, index) after the D numbers.
  json wink = {{"precision", 8}, {"dimensions", 4}, {"words", {"red", "zebra", "left"}}};
  for (auto [w, seed] : {std::pair<const char*, float>{"red", 1}, {"zebra", 2}, {"left", -3}}) {
    auto v = json(test_vector(seed, 4));
    v.push_back(9.5);
    v.push_back(0);
    wink["vectors"][w] = v;
  }
  const auto wink_path = write_file(dir + "/v.json", wink.dump());
  for (const auto& path : {glove, wink_path}) {
    const auto wv = tr::load_word_vectors(path, {"red", "left", "square"});
    EXPECT_EQ(wv.dim, 4) << path;
    ASSERT_EQ(wv.vectors.size(), 2u) << path;  // zebra is not wanted, square has no vector
    EXPECT_EQ(wv.vectors.at("red"), test_vector(1, 4)) << path;
    EXPECT_EQ(wv.vectors.at("left"), test_vector(-3, 4)) << path;
  }
}

TEST(TrainWordVectors, MalformedFilesAreClearErrors) {
  const auto dir = temp_dir("wvbad");
  const std::unordered_set<std::string> want = {"red"};
  const auto load = [&](const std::string& name, const std::string& text) {
    return error_of([&] { tr::load_word_vectors(write_file(dir + "/" + name, text), want); });
  };
  EXPECT_NE(
      error_of([&] { tr::load_word_vectors(dir + "/none.txt", want); }).find("cannot be opened"),
      std::string::npos);
  EXPECT_NE(load("ragged.txt", "red 1 2 3\nblue 1 2\n").find("line 2 has 2 numbers"),
            std::string::npos);
  EXPECT_NE(load("word.txt", "red 1 x 3\n").find("'x', not a number"), std::string::npos);
  EXPECT_NE(load("inf.txt", "red 1 inf 3\n").find("non-finite"), std::string::npos);
  EXPECT_NE(load("empty.txt", "").find("holds no vectors"), std::string::npos);
  EXPECT_NE(load("bad.json", "{\"dimensions\": 3, \"vectors\": {").find("not valid JSON"),
            std::string::npos);
  EXPECT_NE(load("nodim.json", "{\"vectors\": {}}").find("\"dimensions\""), std::string::npos);
  EXPECT_NE(load("short.json", R"({"dimensions": 3, "vectors": {"red": [1, 2]}})")
                .find("fewer than 3 numbers"),
            std::string::npos);
}

TEST(TrainWordVectors, CoveredRowsTakeTheCommonlyScaledVectorsOthersStay) {
  tr::WordVectors wv;
  wv.dim = 3;
  wv.vectors["b"] = {3, 0, 0};
  wv.vectors["c"] = {0, 6, 0};
  auto table = at::full({3, 3}, 0.5f);
  EXPECT_EQ(tr::init_word_table(table, {"a", "b", "c"}, wv), 2);
  EXPECT_TRUE(at::equal(table[0], at::full({3}, 0.5f)));  // "a" has no vector
  // One factor for all rows: unit RMS over the covered entries, ratios kept (c is twice b).
  const auto covered = table.slice(0, 1, 3);
  EXPECT_NEAR(covered.pow(2).mean().sqrt().item<double>(), 1.0, 1e-6);
  EXPECT_NEAR(table[2][1].item<double>() / table[1][0].item<double>(), 2.0, 1e-6);
  auto wrong = at::zeros({3, 4});
  EXPECT_NE(error_of([&] {
              tr::init_word_table(wrong, {"a", "b", "c"}, wv);
            }).find("3 x 3"),
            std::string::npos);
}

TEST(TrainGpt, WordVectorsStartTheWordTable) {
  std::ostringstream log;
  const auto d = tiny_dataset();
  const auto vq = vq_run(d, &log);
  const int64_t cap_dim = kGptConfig["cap_dim"].get<int64_t>();
  const auto dir = temp_dir("wvfiles");
  const auto vectors =
      write_file(dir + "/v.txt", glove_line("red", test_vector(1, cap_dim)) +
                                     glove_line("square", test_vector(-2, cap_dim)) +
                                     glove_line("zebra", test_vector(5, cap_dim)));
  auto cfg = kGptConfig;
  cfg["lr"] = 1e-12;  // the saved table is the initial one
  auto o = options(temp_dir("gptwv"), 1, cfg, &log);
  o.word_vectors = vectors;
  ASSERT_TRUE(tr::train_gpt(d, vq, o).finished);
  EXPECT_NE(log.str().find("word table: 2 of"), std::string::npos) << log.str();
  const auto run = tr::load_gpt_run(o.out);
  EXPECT_EQ(run.run["config"]["word_vectors"], "v.txt");
  const auto& table = run.weights.at("cls_embedding.word_embeddings.weight");
  const auto& words = run.vocab.entries();
  const auto row = [&](const std::string& w) {
    const auto it = std::find(words.begin(), words.end(), w);
    EXPECT_NE(it, words.end()) << w;
    return table[it - words.begin()];
  };
  // Both covered rows are the file's vectors times one positive factor.
  const auto red = at::tensor(test_vector(1, cap_dim)),
             square = at::tensor(test_vector(-2, cap_dim));
  const double k = row("red")[0].item<double>() / red[0].item<double>();
  EXPECT_GT(k, 0.0);
  EXPECT_TRUE(at::allclose(row("red"), red * k, 1e-4, 1e-5));
  EXPECT_TRUE(at::allclose(row("square"), square * k, 1e-4, 1e-5));

  // Wrong width, no word covered, and a second stage are refused before training.
  auto wide = write_file(dir + "/wide.txt", glove_line("red", test_vector(1, cap_dim + 1)));
  auto w = options(temp_dir("gptwvwide"), 1, cfg, &log);
  w.word_vectors = wide;
  EXPECT_NE(error_of([&] { tr::train_gpt(d, vq, w); }).find("set \"cap_dim\": 17"),
            std::string::npos);
  auto none = options(temp_dir("gptwvnone"), 1, cfg, &log);
  none.word_vectors = write_file(dir + "/none.txt", glove_line("zebra", test_vector(1, cap_dim)));
  EXPECT_NE(error_of([&] { tr::train_gpt(d, vq, none); }).find("none of the"), std::string::npos);
  auto stage2 = options(temp_dir("gptwvstage2"), 1, cfg, &log);
  stage2.word_vectors = vectors;
  stage2.init_from = o.out;
  EXPECT_NE(error_of([&] { tr::train_gpt(d, vq, stage2); }).find("second stage"),
            std::string::npos);
}

TEST(TrainDrafter, LossFallsAndAccuracyIsReported) {
  std::ostringstream log;
  const auto d = tiny_dataset();
  const auto vq = vq_run(d, &log);
  const auto gpt = gpt_run(d, vq, &log);
  auto cfg = kDrafterConfig;
  cfg["lr"] = 3e-3;
  const auto out = temp_dir("drafter");
  auto r = tr::train_drafter(d, gpt, options(out, 16, cfg, &log));
  ASSERT_TRUE(r.finished);
  expect_finite_and_falling(r.losses);
  for (const char* part : {"validation", "self_samples_heldout"}) {
    ASSERT_TRUE(r.metrics.contains(part)) << part;
    for (const char* k : {"top1", "top3", "cfg_top1", "cfg_top3", "accept_t1"}) {
      const double v = r.metrics[part][k].get<double>();
      EXPECT_GE(v, 0.0) << part << "." << k;
      EXPECT_LE(v, 1.0) << part << "." << k;
    }
    EXPECT_GE(r.metrics[part]["top3"].get<double>(), r.metrics[part]["top1"].get<double>());
  }
  EXPECT_TRUE(fs::exists(out + "/samples.safetensors"));

  // Assemble a model directory in fp16 and load it with the product's loader.
  tr::AssembleOptions a;
  a.vq_dir = vq;
  a.gpt_dir = gpt;
  a.drafter_dir = out;
  a.out = temp_dir("model");
  a.dataset_info = d.info;
  a.dataset_path = "tiny.safetensors";
  tr::assemble_model(a);
  auto bundle = adtree::model::load_model_dir(a.out);
  EXPECT_TRUE(bundle.drafter != nullptr);
  EXPECT_EQ(bundle.manifest.kind, "t2i-words");
  EXPECT_EQ(bundle.manifest.license["data"][0]["images_license"], "Apache-2.0");
  EXPECT_TRUE(bundle.manifest.provenance["runs"].contains("drafter"));
  auto cond = adtree::model::make_condition(*bundle.gpt, bundle.vocab, "red square noto", true);
  EXPECT_EQ(cond.batch(), 2);
  // fp16 storage, fp32 compute after loading.
  EXPECT_EQ(bundle.gpt->weights().at("output.weight").scalar_type(), at::kFloat);
  // Prompt fidelity on the assembled model: seen prompts, nearest training pictures.
  tr::FidelityOptions fo;
  fo.prompts = 3;
  fo.batch = 2;
  auto fid = tr::prompt_fidelity(bundle, d, fo, nullptr);
  // Emoji-level chance: the share of training pictures showing the prompt's emoji, at least one.
  const double emoji_chance = fid.metrics["emoji_chance_top1"];
  EXPECT_GE(emoji_chance, fid.metrics["chance_top1"].get<double>());
  EXPECT_LE(emoji_chance, 1.0);
  EXPECT_EQ(fid.prompts.size(), 3u);
  EXPECT_EQ(fid.images.sizes(), (std::vector<int64_t>{3, 8, 8, 3}));
  EXPECT_EQ(fid.nearest.sizes(), fid.images.sizes());
  for (const char* space : {"pixel", "tokens"}) {
    const double t1 = fid.metrics[space]["top1"], t5 = fid.metrics[space]["top5"];
    EXPECT_GE(t5, t1) << space;
    EXPECT_LE(t5, 1.0) << space;
    // An exact hit is also an emoji hit (one caption, one picture, one emoji).
    const double e1 = fid.metrics[space]["emoji_top1"], e5 = fid.metrics[space]["emoji_top5"];
    EXPECT_GE(e1, t1) << space;
    EXPECT_GE(e5, t5) << space;
    EXPECT_GE(e5, e1) << space;
    EXPECT_LE(e5, 1.0) << space;
  }
  EXPECT_NE(error_of([&] {
              auto bad = a;
              bad.dtype = "int8";
              tr::assemble_model(bad);
            }).find("storage dtype"),
            std::string::npos);
}

TEST(TrainDrafter, ResumeReproducesTheUninterruptedRun) {
  std::ostringstream log;
  const auto d = tiny_dataset();
  const auto vq = vq_run(d, &log);
  const auto gpt = gpt_run(d, vq, &log);
  expect_exact_resume("drafter", 8, kDrafterConfig,
                      [&](const tr::TrainOptions& o) { return tr::train_drafter(d, gpt, o); });
}

// CASCADE's signal: a row whose feature comes back later in the sequence (cosine > tau_h) weighs
// `weight` in the soft cross-entropy; earlier rows are never compared, nor a row with itself.
TEST(TrainDrafter, CascadeWeightsMarkRowsWhoseFeatureRecursLater) {
  auto f = at::zeros({1, 4, 3});
  f[0][0] = at::tensor({1.0f, 0.0f, 0.0f});
  f[0][1] = at::tensor({0.0f, 1.0f, 0.0f});
  f[0][2] = at::tensor({0.9f, 0.1f, 0.0f});  // cosine 0.99 with row 0, 0.11 with row 1
  f[0][3] = at::tensor({0.0f, 0.0f, 1.0f});
  auto w = tr::cascade_row_weights(f, 0.625, 2.0);
  EXPECT_TRUE(at::equal(w, at::tensor({2.0f, 1.0f, 1.0f, 1.0f}).view({1, 4})))
      << w;  // row 2 matches only the earlier row 0
  EXPECT_TRUE(at::equal(tr::cascade_row_weights(f, 0.999, 2.0), at::ones({1, 4})));
  // A short run with the signal on trains, and a weight below 1 is refused.
  std::ostringstream log;
  const auto d = tiny_dataset();
  const auto vq = vq_run(d, &log);
  const auto gpt = gpt_run(d, vq, &log);
  auto cfg = kDrafterConfig;
  cfg["lr"] = 3e-3;
  auto plain = tr::train_drafter(d, gpt, options(temp_dir("plain"), 16, cfg, &log));
  cfg["cascade_weight"] = 2.0;
  auto r = tr::train_drafter(d, gpt, options(temp_dir("cascade"), 16, cfg, &log));
  ASSERT_TRUE(r.finished);
  expect_finite_and_falling(r.losses);
  EXPECT_NE(r.losses, plain.losses) << "the weights must reach the loss";
  cfg["cascade_weight"] = 0.5;
  EXPECT_NE(error_of([&] {
              tr::train_drafter(d, gpt, options(temp_dir("cw"), 2, cfg, &log));
            }).find("cascade_weight must be >= 1"),
            std::string::npos);
}

TEST(TrainDrafter, NeedsAFinishedGptRunOfTheSameData) {
  std::ostringstream log;
  const auto d = tiny_dataset();
  const auto out = temp_dir("bad");
  EXPECT_NE(error_of([&] {
              tr::train_drafter(d, out, options(out, 2, kDrafterConfig, &log));
            }).find("not a finished 'adtree train gpt' run"),
            std::string::npos);
  const auto vq = vq_run(d, &log);
  const auto gpt = gpt_run(d, vq, &log);
  auto fewer = d.select({0, 1, 2, 3, 9});
  EXPECT_NE(error_of([&] {
              tr::train_drafter(fewer, gpt, options(out, 2, kDrafterConfig, &log));
            }).find("train the drafter on the GPT's dataset"),
            std::string::npos);
}

TEST(TrainDrafter, WarmStartTakesAFinishedHeadOfTheSameShape) {
  std::ostringstream log;
  const auto d = tiny_dataset();
  const auto vq = vq_run(d, &log);
  const auto gpt = gpt_run(d, vq, &log);
  const auto first = temp_dir("head1");
  ASSERT_TRUE(tr::train_drafter(d, gpt, options(first, 4, kDrafterConfig, &log)).finished);
  // Zero steps of learning (lr ~ 0) from the first head: the weights are exactly the first's.
  auto cfg = kDrafterConfig;
  cfg["lr"] = 1e-12;
  auto o = options(temp_dir("head2"), 1, cfg, &log);
  o.init_from = first;
  ASSERT_TRUE(tr::train_drafter(d, gpt, o).finished);
  EXPECT_NE(log.str().find("starting from the weights of " + first), std::string::npos);
  const auto a = adtree::io::SafetensorsReader(first + "/drafter.safetensors").all();
  const auto b = adtree::io::SafetensorsReader(o.out + "/drafter.safetensors").all();
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, t] : a) {
    EXPECT_TRUE(at::allclose(b.at(name), t, 1e-5, 1e-6)) << name;
  }
  // Not a finished drafter run, and a head for another GPT shape: clear errors.
  auto bad = options(temp_dir("head3"), 1, kDrafterConfig, &log);
  bad.init_from = gpt;
  EXPECT_NE(error_of([&] {
              tr::train_drafter(d, gpt, bad);
            }).find("not a finished 'adtree train drafter' run folder"),
            std::string::npos);
  auto wide_cfg = kGptConfig;
  wide_cfg["dim"] = 64;
  const auto wide_gpt = temp_dir("widegpt");
  tr::train_gpt(d, vq, options(wide_gpt, 2, wide_cfg, &log));
  const auto wide_head = temp_dir("widehead");
  tr::train_drafter(d, wide_gpt, options(wide_head, 1, kDrafterConfig, &log));
  bad.init_from = wide_head;
  EXPECT_NE(error_of([&] { tr::train_drafter(d, gpt, bad); }).find("a head for another GPT shape"),
            std::string::npos);
}

// ---- bf16 autocast (--matmul bf16)
// ----------------------------------------------------------------

namespace {
// Each step's loss under bf16 products next to the fp32 run's: the same batches, noise and start,
// so the two may differ only by rounding (bf16's 8-bit mantissa, fp32 sums and master weights).
template <class Train>
void expect_bf16_tracks_fp32(const std::string& name, int64_t steps, const json& config,
                             Train train) {
  std::ostringstream log;
  auto fp32 = train(options(temp_dir(name + "_fp32"), steps, config, &log));
  auto o = options(temp_dir(name + "_bf16"), steps, config, &log);
  o.matmul = "bf16";
  auto bf16 = train(o);
  ASSERT_TRUE(bf16.finished);
  ASSERT_EQ(bf16.losses.size(), fp32.losses.size());
  expect_finite_and_falling(bf16.losses);
  bool differs = false;
  for (size_t i = 0; i < bf16.losses.size(); ++i) {
    EXPECT_NEAR(bf16.losses[i], fp32.losses[i], 0.03 * std::abs(fp32.losses[i]))
        << name << " step " << i + 1;
    differs = differs || bf16.losses[i] != fp32.losses[i];
  }
  EXPECT_TRUE(differs) << name << ": the bf16 run computed exactly fp32's losses (no autocast?)";
}
}  // namespace

TEST(TrainBf16, EveryStageTracksItsFp32Run) {
  std::ostringstream log;
  const auto d = tiny_dataset();
  expect_bf16_tracks_fp32("vq", 8, kVqConfig,
                          [&](const tr::TrainOptions& o) { return tr::train_vq(d, o); });
  const auto vq = vq_run(d, &log);
  auto gcfg = kGptConfig;
  gcfg["lr"] = 3e-3;
  expect_bf16_tracks_fp32("gpt", 8, gcfg,
                          [&](const tr::TrainOptions& o) { return tr::train_gpt(d, vq, o); });
  const auto gpt = gpt_run(d, vq, &log);
  auto dcfg = kDrafterConfig;
  dcfg["lr"] = 3e-3;
  expect_bf16_tracks_fp32("drafter", 8, dcfg,
                          [&](const tr::TrainOptions& o) { return tr::train_drafter(d, gpt, o); });
}

TEST(TrainGpt, ARunFolderWithShardedWeightsLoadsAndAssembles) {
  // A run folder small enough to commit or carry keeps its weights as shards (16 MiB at most);
  // the next stages read it as they read the single file.
  std::ostringstream log;
  const auto d = tiny_dataset();
  const auto vq = vq_run(d, &log);
  const auto gpt = gpt_run(d, vq, &log);
  const auto single = tr::load_gpt_run(gpt);
  const auto file = gpt + "/gpt.safetensors";
  const auto weights = adtree::io::SafetensorsReader(file).all();
  adtree::io::write_safetensors_set(file, weights, /*max_bytes=*/16 << 10);
  ASSERT_FALSE(fs::exists(file));
  ASSERT_GT(adtree::io::safetensors_set_files(file).size(), 2u);  // the index and its shards
  const auto sharded = tr::load_gpt_run(gpt);
  ASSERT_EQ(sharded.weights.size(), single.weights.size());
  for (const auto& [name, t] : single.weights)
    EXPECT_TRUE(sharded.weights.at(name).equal(t)) << name;
  tr::AssembleOptions a;
  a.vq_dir = vq;
  a.gpt_dir = gpt;
  a.out = temp_dir("sharded_model");
  a.dataset_info = d.info;
  a.dataset_path = "tiny.safetensors";
  tr::assemble_model(a);
  EXPECT_TRUE(adtree::model::load_model_dir(a.out).gpt != nullptr);
  // Neither layout: a clear error naming both.
  for (const auto& f : adtree::io::safetensors_set_files(file)) fs::remove(f);
  try {
    tr::load_gpt_run(gpt);
    ADD_FAILURE() << "a run folder without weights loaded";
  } catch (const adtree::Error& e) {
    EXPECT_NE(std::string(e.what()).find("gpt.safetensors.index.json"), std::string::npos);
  }
}
