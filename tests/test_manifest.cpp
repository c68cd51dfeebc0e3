// Model directories: a good one loads; every kind of damage is reported clearly, all at once.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/safetensors.h"
#include "model/model_dir.h"
#include "model/random_model.h"
#include "util/error.h"

using namespace adtree::model;
namespace fs = std::filesystem;

namespace {
std::string make_model(const std::string& name) {
  const auto dir = (fs::path(::testing::TempDir()) / ("adtree_manifest_" + name)).string();
  fs::remove_all(dir);
  auto g = GptConfig::preset("micro");
  write_random_model(dir, g, small_vq_config(g.vocab_size, g.grid_h), 1, name);
  return dir;
}
nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}
void write_json(const std::string& path, const nlohmann::json& j) { std::ofstream(path) << j.dump(); }
std::string load_error(const std::string& dir, const LoadOptions& o = {}) {
  try {
    load_model_dir(dir, o);
  } catch (const adtree::Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(ModelDir, RandomModelLoadsAndGenerates) {
  auto dir = make_model("ok");
  auto m = load_model_dir(dir);
  EXPECT_EQ(m.manifest.kind, "t2i-words");
  EXPECT_EQ(m.gpt_config.dim, 64);
  ASSERT_TRUE(m.vq);
  EXPECT_EQ(m.vocab.size(), m.gpt_config.num_words);
  auto cond = make_condition(*m.gpt, m.vocab, "a red cat", true);
  EXPECT_EQ(cond.batch(), 2);
}

TEST(ModelDir, ListsEveryTensorMismatchInOneError) {
  auto dir = make_model("tensors");
  {
    auto w = adtree::io::SafetensorsReader(dir + "/gpt.safetensors").all();
    w.erase("layers.0.attention.wo.weight");
    w.erase("norm.weight");
    w["output.weight"] = at::zeros({5, 5});
    adtree::io::write_safetensors(dir + "/gpt.safetensors", w);
  }
  const auto msg = load_error(dir);
  EXPECT_NE(msg.find("3 problem(s)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("gpt.safetensors: missing tensor 'layers.0.attention.wo.weight'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("missing tensor 'norm.weight'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'output.weight' has shape [5, 5], expected [32, 64]"), std::string::npos) << msg;
}

TEST(ModelDir, ConfigMismatchesAreListedTogether) {
  auto dir = make_model("config");
  auto j = read_json(dir + "/model.json");
  j["codebook_size"] = 99;
  j["gpt"]["dim"] = 128;  // now every GPT tensor has the wrong shape too
  write_json(dir + "/model.json", j);
  const auto msg = load_error(dir);
  EXPECT_NE(msg.find("gpt.vocab_size 32 differs from codebook_size 99"), std::string::npos) << msg;
  EXPECT_NE(msg.find("vq.codebook_size 32 differs from codebook_size 99"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'tok_embeddings.weight' has shape [32, 64], expected [32, 128]"), std::string::npos) << msg;
}

TEST(ModelDir, MissingManifestAndBadJsonAreClear) {
  auto dir = make_model("json");
  std::ofstream(dir + "/model.json") << "{ not json";
  auto msg = load_error(dir);
  EXPECT_NE(msg.find("model.json: not valid JSON"), std::string::npos) << msg;
  fs::remove(dir + "/model.json");
  msg = load_error(dir);
  EXPECT_NE(msg.find("cannot open the model manifest"), std::string::npos) << msg;
  EXPECT_NE(load_error(dir + "/nope").find("does not exist"), std::string::npos);
}

TEST(ModelDir, StructuralProblemsInManifestAreAllNamed) {
  auto dir = make_model("structure");
  auto j = read_json(dir + "/model.json");
  j.erase("name");
  j["kind"] = "video";
  j["grid"] = {16};
  write_json(dir + "/model.json", j);
  const auto msg = load_error(dir);
  EXPECT_NE(msg.find("missing 'name'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'kind' must be c2i, t2i-words or t2i-embeddings, not 'video'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'grid' must be [h, w]"), std::string::npos) << msg;
}

TEST(ModelDir, CorruptWeightFileIsReportedWithItsName) {
  auto dir = make_model("corrupt");
  fs::resize_file(dir + "/vq.safetensors", 100);
  const auto msg = load_error(dir);
  EXPECT_NE(msg.find("vq.safetensors"), std::string::npos) << msg;
}

TEST(ModelDir, VocabularySizeMustMatchTheGpt) {
  auto dir = make_model("vocab");
  write_json(dir + "/text.json", {{"kind", "words"}, {"words", {"a", "b"}}});
  const auto msg = load_error(dir);
  EXPECT_NE(msg.find("text.json: 2 entries, the GPT has 12"), std::string::npos) << msg;
}

TEST(ModelDir, CudaWithoutCudaAndBadDtypeAreClearErrors) {
  auto dir = make_model("device");
  if (!at::hasCUDA()) {
    LoadOptions o;
    o.device = "cuda";
    EXPECT_NE(load_error(dir, o).find("no CUDA support"), std::string::npos);
  }
  LoadOptions o;
  o.dtype = "fp8";
  EXPECT_NE(load_error(dir, o).find("unknown dtype 'fp8'"), std::string::npos);
  o.dtype = "fp32";
  o.device = "tpu";
  EXPECT_NE(load_error(dir, o).find("unknown device 'tpu'"), std::string::npos);
}

TEST(Conditioning, UnknownPromptWordsAreAllNamed) {
  auto m = load_model_dir(make_model("words"));
  try {
    make_condition(*m.gpt, m.vocab, "a zebra on a unicorn", true);
    FAIL();
  } catch (const adtree::Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'zebra'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'on'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'unicorn'"), std::string::npos) << msg;
  }
  EXPECT_THROW(make_condition(*m.gpt, m.vocab, "  ,, ", true), adtree::Error);
  EXPECT_THROW(make_condition(*m.gpt, m.vocab, "a a a a a a", true), adtree::Error);  // > cond_len
}

TEST(Conditioning, WordsAreLeftPaddedAndNullCaptionSharesTheMask) {
  auto m = load_model_dir(make_model("pad"));
  auto cond = make_condition(*m.gpt, m.vocab, "Red CAT!", true);
  auto mask = cond.caption_mask;
  ASSERT_EQ(mask.size(1), 4);
  EXPECT_FALSE(mask[0][0].item<bool>());
  EXPECT_FALSE(mask[0][1].item<bool>());
  EXPECT_TRUE(mask[0][2].item<bool>());
  EXPECT_TRUE(at::equal(mask[0], mask[1]));
  EXPECT_EQ(cond.caption[0][0].abs().sum().item<float>(), 0.f);  // padded slots are zero vectors
  EXPECT_TRUE(at::equal(cond.caption[1], m.gpt->null_caption()));
}

TEST(Vocabulary, CompletesByPrefix) {
  Vocabulary v(Vocabulary::Kind::Words, {"red", "rose", "blue", "Robot"});
  auto c = v.complete("ro");
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0], "Robot");
  EXPECT_EQ(c[1], "rose");
}
