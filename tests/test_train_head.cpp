// `adtree train drafter --model`: a draft head trained on a model directory's own samples, with no
// dataset, for a caption model and a class model; the head it learns is accepted more often than
// the one it started from, a stopped run resumes to the same weights, the samples are a cache
// (extended, redrawn when damaged), and installing puts the head into the model directory, keeps
// the head it replaces and refuses a head trained for other weights.
#include <gtest/gtest.h>
#include <unistd.h>

#include <ATen/ATen.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "error_of.h"
#include "io/manifest.h"
#include "io/safetensors.h"
#include "model/model_dir.h"
#include "model/random_model.h"
#include "train/head_on_model.h"
#include "train/prompt_rows.h"
#include "util/error.h"

namespace fs = std::filesystem;
namespace tr = adtree::train;
namespace md = adtree::model;
using json = nlohmann::json;
using adtree::testing::error_of;

namespace {

class TrainHeadTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ =
        (fs::temp_directory_path() / ("adtree_test_head_" + std::to_string(::getpid()))).string();
    auto g = md::GptConfig::preset("micro");
    md::write_random_model(root_ + "/words", g, md::small_vq_config(g.vocab_size, g.grid_h), 11,
                           "head words");
    g.cond = md::CondKind::Class;
    g.num_classes = 5;
    md::write_random_model(root_ + "/classes", g, md::small_vq_config(g.vocab_size, g.grid_h), 12,
                           "head classes");
    // A LlamaGen-style t2i model: caption rows from a (tiny, random) T5 encoder in its t5/ folder.
    auto t = md::GptConfig::preset("micro");
    t.num_words = 0, t.cond_len = 16;
    md::write_random_model(root_ + "/t5", t, md::small_vq_config(t.vocab_size, t.grid_h), 13,
                           "head t5", "t5");
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }

  // A fresh copy of a test model (installing changes it).
  static std::string model_copy(const std::string& which, const std::string& name) {
    const auto dir = root_ + "/" + name;
    fs::remove_all(dir);
    fs::copy(root_ + "/" + which, dir, fs::copy_options::recursive);
    return dir;
  }

  static tr::HeadPrompts word_prompts() {
    tr::HeadPrompts p;
    p.train = {"red cat", "green dog", "blue face", "yellow heart", "red star", "cat face"};
    p.validation = {"blue sun", "green moon"};
    return p;
  }

  tr::TrainOptions options(const std::string& out, int64_t steps, json config = json::object()) {
    tr::TrainOptions o;
    o.out = root_ + "/" + out;
    o.steps = steps;
    o.batch = 4;
    o.lr = 3e-3;
    o.seed = 5;
    json c = {
        {"samples", 16}, {"validation_samples", 8}, {"sample_batch", 4},     {"warm_start", false},
        {"warmup", 2},   {"eval_every", 1000},      {"checkpoint_every", 5}, {"eval_images", 0}};
    c.update(config);
    o.config = c;
    o.log = &log;
    o.log_every = 1000;
    return o;
  }

  static std::string root_;
  std::ostringstream log;
};

std::string TrainHeadTest::root_;

double accept(const json& metrics) {
  return metrics["validation"]["accept_t1"].get<double>();
}

}  // namespace

TEST_F(TrainHeadTest, ACaptionModelsHeadLearnsFromItsOwnSamplesWithNoDataset) {
  // A random target is nearly uniform at temperature 1, where any head is accepted: at 0.25 its
  // distributions are peaked enough that only a trained head predicts them.
  const auto o =
      options("words-run", 40, {{"sample_temperature", 0.25}, {"mix_temperature", 0.25}});
  const auto r = tr::train_head_on_model(root_ + "/words", word_prompts(), o);
  ASSERT_TRUE(r.finished);
  for (const char* f : {"drafter.safetensors", "run.json", "samples.safetensors",
                        "validation-samples.safetensors", "initial-metrics.json"}) {
    EXPECT_TRUE(fs::exists(o.out + "/" + f)) << f;
  }
  std::ifstream in(o.out + "/initial-metrics.json");
  const json initial = json::parse(in);
  // Trained on what is verified, the head's drafts are accepted more often on held-out prompts, and
  // its best token is the target's far more often (a random head: about 1 in 20 here).
  EXPECT_GT(accept(r.metrics), accept(initial)) << log.str();
  const auto top1 = [](const json& m) { return m["validation"]["cfg_top1"].get<double>(); };
  EXPECT_GT(top1(r.metrics), top1(initial) + 0.05) << log.str();
  EXPECT_EQ(r.metrics["validation"]["images"], 8);
  EXPECT_EQ(r.metrics["validation"]["cfg"], 1.0);  // the model's own CFG scale
}

TEST_F(TrainHeadTest, AClassModelSamplesEveryClassByDefault) {
  const auto dir = root_ + "/classes";
  md::LoadOptions lo;
  lo.load_vq = false;
  const auto m = md::load_model_dir(dir, lo);
  tr::HeadPrompts p;
  p.train = tr::all_classes(m);
  ASSERT_EQ(p.train.size(), 5u);
  const auto r = tr::train_head_on_model(dir, p, options("classes-run", 3));
  ASSERT_TRUE(r.finished);
  EXPECT_NE(log.str().find("4 training prompts, 1 held out"), std::string::npos) << log.str();
  const auto words = md::load_model_dir(root_ + "/words", lo);
  EXPECT_NE(error_of([&] { tr::all_classes(words); }).find("--prompts"), std::string::npos);
}

TEST_F(TrainHeadTest, AStoppedRunResumesToTheSameHead) {
  auto whole = options("whole", 8);
  ASSERT_TRUE(tr::train_head_on_model(root_ + "/words", word_prompts(), whole).finished);
  auto part = options("parts", 8);
  part.stop_at = 5;
  ASSERT_FALSE(tr::train_head_on_model(root_ + "/words", word_prompts(), part).finished);
  part.stop_at = 0;
  part.resume = true;
  ASSERT_TRUE(tr::train_head_on_model(root_ + "/words", word_prompts(), part).finished);
  const auto a = adtree::io::SafetensorsReader(whole.out + "/drafter.safetensors").all();
  const auto b = adtree::io::SafetensorsReader(part.out + "/drafter.safetensors").all();
  for (const auto& [name, t] : a) EXPECT_TRUE(at::equal(t, b.at(name))) << name;
}

TEST_F(TrainHeadTest, SamplesAreACacheThatIsExtendedOrRedrawn) {
  auto small = options("samples-a", 1);
  ASSERT_TRUE(tr::train_head_on_model(root_ + "/words", word_prompts(), small).finished);
  const auto first = adtree::io::SafetensorsReader(small.out + "/samples.safetensors").all();
  // More samples of the same request: the first ones are kept and the rest drawn.
  auto more = options("samples-b", 1, {{"samples", 24}});
  fs::create_directories(more.out);
  fs::copy_file(small.out + "/samples.safetensors", more.out + "/samples.safetensors");
  ASSERT_TRUE(tr::train_head_on_model(root_ + "/words", word_prompts(), more).finished);
  EXPECT_NE(log.str().find("extending"), std::string::npos) << log.str();
  const auto grown = adtree::io::SafetensorsReader(more.out + "/samples.safetensors").all();
  ASSERT_EQ(grown.at("tokens").size(0), 24);
  EXPECT_TRUE(at::equal(grown.at("tokens").narrow(0, 0, 16), first.at("tokens")));
  // A damaged file is drawn again: a cache loses nothing.
  auto damaged = options("samples-c", 1);
  fs::create_directories(damaged.out);
  std::ofstream(damaged.out + "/samples.safetensors") << "not a safetensors file";
  ASSERT_TRUE(tr::train_head_on_model(root_ + "/words", word_prompts(), damaged).finished);
  EXPECT_NE(log.str().find("cannot be read"), std::string::npos) << log.str();
  const auto again = adtree::io::SafetensorsReader(damaged.out + "/samples.safetensors").all();
  EXPECT_TRUE(at::equal(again.at("tokens"), first.at("tokens")));
}

TEST_F(TrainHeadTest, InstallPutsTheHeadIntoTheModelAndKeepsTheOneItReplaces) {
  const auto dir = model_copy("words", "install-model");
  const auto before = adtree::io::SafetensorsReader(dir + "/drafter.safetensors").all();
  auto o = options("install-run", 2);
  ASSERT_TRUE(tr::train_head_on_model(dir, word_prompts(), o).finished);
  const auto line = tr::install_head(o.out, dir);
  EXPECT_NE(line.find("replaced-drafter.safetensors"), std::string::npos) << line;
  const auto kept = adtree::io::SafetensorsReader(o.out + "/replaced-drafter.safetensors").all();
  for (const auto& [name, t] : before) EXPECT_TRUE(at::equal(t, kept.at(name))) << name;
  md::LoadOptions lo;
  lo.load_vq = false;
  const auto m = md::load_model_dir(dir, lo);
  ASSERT_TRUE(m.drafter);
  const auto trained = adtree::io::SafetensorsReader(o.out + "/drafter.safetensors").all();
  for (const auto& [name, t] : trained) {
    EXPECT_TRUE(at::allclose(m.drafter_weights.at(name).to(at::kFloat), t)) << name;
  }
  EXPECT_EQ(m.manifest.provenance["runs"]["drafter"]["steps"], 2);
}

TEST_F(TrainHeadTest, InstallRefusesAHeadForOtherWeightsAndChangesNothing) {
  auto o = options("other-run", 1);
  ASSERT_TRUE(tr::train_head_on_model(root_ + "/words", word_prompts(), o).finished);
  const auto dir = model_copy("classes", "other-model");
  std::ifstream in(dir + "/model.json");
  const std::string manifest((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(error_of([&] { tr::install_head(o.out, dir); }).find("other GPT weights"),
            std::string::npos);
  std::ifstream again(dir + "/model.json");
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(again)), {}), manifest);
  EXPECT_NE(error_of([&] { tr::install_head(root_ + "/nowhere", dir); }).find("not a finished"),
            std::string::npos);
}

TEST_F(TrainHeadTest, BadPromptsAndSettingsAreClearErrors) {
  auto p = word_prompts();
  p.train.push_back("purple cat");
  p.train_source = "prompts.txt";
  const auto e = error_of([&] { tr::train_head_on_model(root_ + "/words", p, options("bad", 1)); });
  EXPECT_NE(e.find("prompts.txt, prompt 7 ('purple cat')"), std::string::npos) << e;
  EXPECT_NE(e.find("purple"), std::string::npos) << e;
  const auto empty = root_ + "/empty.txt";
  std::ofstream(empty) << "# only a comment\n\n";
  EXPECT_NE(error_of([&] { tr::read_prompt_list(empty); }).find("holds no prompt"),
            std::string::npos);
  EXPECT_NE(error_of([&] { tr::read_prompt_list(root_ + "/missing.txt"); }).find("cannot read"),
            std::string::npos);
  const auto s = error_of([&] {
    tr::train_head_on_model(root_ + "/words", word_prompts(),
                            options("bad-cfg", 1, {{"validation_share", 1.5}}));
  });
  EXPECT_NE(s.find("validation_share"), std::string::npos) << s;
  EXPECT_NE(error_of([&] {
              tr::train_head_on_model(root_ + "/words", word_prompts(),
                                      options("bad-key", 1, {{"sampels", 8}}));
            }).find("sampels"),
            std::string::npos);
}

TEST_F(TrainHeadTest, AParallelHeadLearnsEveryDepthAndInstallsBesideTheEagleHead) {
  const auto dir = model_copy("words", "parallel-model");
  auto o = options("parallel-run", 40,
                   {{"kind", "parallel"},
                    {"depths", 3},
                    {"sample_temperature", 0.25},
                    {"mix_temperature", 0.25}});
  const auto r = tr::train_head_on_model(dir, word_prompts(), o);
  ASSERT_TRUE(r.finished);
  std::ifstream in(o.out + "/initial-metrics.json");
  const json initial = json::parse(in);
  const auto& depth = r.metrics["validation"]["cfg_top1_by_depth"];
  ASSERT_EQ(depth.size(), 3u);
  for (size_t d = 0; d < 3; ++d) {
    EXPECT_GT(depth[d].get<double>(),
              initial["validation"]["cfg_top1_by_depth"][d].get<double>() + 0.03)
        << "depth " << d + 1 << "\n"
        << log.str();
  }
  ASSERT_TRUE(fs::exists(o.out + "/parallel_head.safetensors"));
  tr::install_head(o.out, dir);
  md::LoadOptions lo;
  lo.load_vq = false;
  const auto m = md::load_model_dir(dir, lo);
  ASSERT_TRUE(m.parallel_head);
  ASSERT_TRUE(m.drafter);  // the EAGLE head stays
  EXPECT_EQ(m.parallel_head->depths(), 3);
  EXPECT_EQ(m.manifest.provenance["runs"]["parallel_head"]["config"]["kind"], "parallel");
  const auto bad = error_of([&] {
    tr::train_head_on_model(dir, word_prompts(), options("bad-kind", 1, {{"kind", "medusa"}}));
  });
  EXPECT_NE(bad.find("kind must be eagle1 or parallel"), std::string::npos) << bad;
}

TEST_F(TrainHeadTest, AnEagleHeadOfTheMixedDistributionRunsOneStream) {
  const auto dir = model_copy("words", "mixed-model");
  auto o = options("mixed-run", 40,
                   {{"output", "mixed"}, {"sample_temperature", 0.25}, {"mix_temperature", 0.25}});
  const auto r = tr::train_head_on_model(dir, word_prompts(), o);
  ASSERT_TRUE(r.finished);
  std::ifstream in(o.out + "/initial-metrics.json");
  const json initial = json::parse(in);
  EXPECT_GT(r.metrics["validation"]["cfg_top1"].get<double>(),
            initial["validation"]["cfg_top1"].get<double>() + 0.05)
      << log.str();
  tr::install_head(o.out, dir);
  md::LoadOptions lo;
  lo.load_vq = false;
  const auto m = md::load_model_dir(dir, lo);
  EXPECT_TRUE(m.drafter_mixed);
  EXPECT_EQ(m.manifest.drafter["output"], "mixed");
  EXPECT_NE(error_of([&] {
              tr::train_head_on_model(
                  dir, word_prompts(),
                  options("bad-output", 1, {{"kind", "parallel"}, {"output", "mixed"}}));
            }).find("output applies to eagle1"),
            std::string::npos);
  auto bad = adtree::io::Manifest::load(dir);
  bad.drafter["output"] = "both";
  bad.save(dir);
  EXPECT_NE(error_of([&] { md::load_model_dir(dir, lo); }).find("drafter.output"),
            std::string::npos);
}

TEST_F(TrainHeadTest, AT5ModelReadsItsTypedPromptsThroughItsEncoder) {
  tr::HeadPrompts p;
  p.train = {"a red apple on a table", "a dog in the snow", "two cats", "a blue car at night"};
  p.validation = {"a green tree"};
  const auto o = options("t5-run", 3);
  ASSERT_TRUE(tr::train_head_on_model(root_ + "/t5", p, o).finished);
  EXPECT_NE(log.str().find("4 training prompts, 1 held out"), std::string::npos) << log.str();
}
