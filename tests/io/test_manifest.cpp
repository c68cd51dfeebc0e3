// Model directories: a good one loads; every kind of damage is reported clearly, all at once.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "io/checksum.h"
#include "io/file_hash.h"
#include "io/safetensors.h"
#include "io/safetensors_shards.h"
#include "model/model_dir.h"
#include "model/params.h"
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
void write_json(const std::string& path, const nlohmann::json& j) {
  std::ofstream(path) << j.dump();
}
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

// The digest against Python's hashlib over the same bytes (name, size, content per file):
// hashlib.sha256(b"a.bin\n3\nabc"), and with an empty b.bin after it.
TEST(FileHash, MatchesAnIndependentSha256AndSkipsMissingFiles) {
  if (!adtree::io::have_sha256()) GTEST_SKIP() << "built without libcrypto";
  const fs::path d = fs::path(::testing::TempDir()) / "adtree_file_hash";
  fs::remove_all(d);
  fs::create_directories(d);
  std::ofstream(d / "a.bin", std::ios::binary) << "abc";
  const std::string a = (d / "a.bin").string(), b = (d / "b.bin").string();
  EXPECT_EQ(adtree::io::sha256_files({a, b}),
            "sha256:d8677926c05b64fffa6311f59ac357a0a262c2296b2150de754c82b85e5d1602");
  std::ofstream(d / "b.bin", std::ios::binary).flush();
  EXPECT_EQ(adtree::io::sha256_files({a, b}),
            "sha256:aeeda71918e6b9dbbf20a2177af40136820b0536d93d5b89428b028821d7b404");
}

// The cache is keyed by path, size and mtime: an entry for the same files is used (a planted
// value comes back), a changed file is hashed again, a damaged entry is detected by its check.
TEST(FileHash, CachedHashIsReusedUntilAFileChanges) {
  if (!adtree::io::have_sha256()) GTEST_SKIP() << "built without libcrypto";
  const fs::path d = fs::path(::testing::TempDir()) / "adtree_file_hash_cache";
  fs::remove_all(d);
  fs::create_directories(d / "cache");
  setenv("XDG_CACHE_HOME", (d / "cache").c_str(), 1);
  // Files written in the last two seconds are not trusted to the cache; age them.
  const auto age = [&](int seconds_ago) {
    fs::last_write_time(d / "a.bin",
                        fs::file_time_type::clock::now() - std::chrono::seconds(seconds_ago));
  };
  std::ofstream(d / "a.bin", std::ios::binary) << "abc";
  const std::vector<std::string> files{(d / "a.bin").string()};
  const std::string real = adtree::io::sha256_files(files);
  EXPECT_EQ(adtree::io::sha256_files_cached(files), real);
  EXPECT_FALSE(fs::exists(d / "cache" / "adtree-studio")) << "a fresh file is not cached";
  age(1000);
  EXPECT_EQ(adtree::io::sha256_files_cached(files), real);
  const fs::path cache = d / "cache" / "adtree-studio" / "model-hashes.json";
  ASSERT_TRUE(fs::exists(cache));
  auto j = read_json(cache.string());
  ASSERT_EQ(j.size(), 1u);
  EXPECT_TRUE(j[0].contains("check"));
  j[0]["sha256"] = "sha256:planted";  // a damaged entry: its check no longer matches
  write_json(cache.string(), j);
  EXPECT_EQ(adtree::io::sha256_files_cached(files), real);
  EXPECT_EQ(read_json(cache.string()).back()["sha256"], real);
  std::ofstream(d / "a.bin", std::ios::binary) << "abcd";  // size and mtime change
  age(900);
  EXPECT_EQ(adtree::io::sha256_files_cached(files), adtree::io::sha256_files(files));
  EXPECT_NE(adtree::io::sha256_files_cached(files), real);
  std::ofstream(cache) << "{ not json";  // a damaged cache is ignored and rebuilt
  age(800);
  EXPECT_EQ(adtree::io::sha256_files_cached(files), adtree::io::sha256_files(files));
  // Bounded: 70 different file sets leave the 64 newest.
  for (int i = 0; i < 70; ++i) {
    std::ofstream(d / "a.bin", std::ios::binary) << "v" << i;
    age(700 - i);
    adtree::io::sha256_files_cached(files);
  }
  EXPECT_EQ(read_json(cache.string()).size(), 64u);
  unsetenv("XDG_CACHE_HOME");
}

TEST(ModelDir, HashNamesTheWeights) {
  if (!adtree::io::have_sha256()) GTEST_SKIP() << "built without libcrypto";
  auto dir = make_model("hash");
  const auto h = load_model_dir(dir).hash;
  EXPECT_EQ(h.size(), 7u + 64u);
  EXPECT_EQ(load_model_dir(dir).hash, h);  // the same files, the same hash
  auto m = read_json(dir + "/model.json");
  m["description"] = "retrained";
  write_json(dir + "/model.json", m);
  EXPECT_NE(load_model_dir(dir).hash, h);
}

// Parts in shards load as one model, give the same logits, and count in the hash; a missing
// shard is one of the listed problems.
TEST(ModelDir, ShardedPartsLoadAsOneModel) {
  auto dir = make_model("shards");
  auto single = load_model_dir(dir);
  auto cond = make_condition(*single.gpt, single.vocab, "a red cat", true);
  auto cache = single.gpt->new_cache(2);
  const auto want = single.gpt->prefill(cache, cond).logits;
  for (const char* part : {"gpt", "drafter"}) {
    const auto base = dir + "/" + part + ".safetensors";
    adtree::io::write_safetensors_set(base, adtree::io::map_safetensors(base), 64 << 10);
    ASSERT_FALSE(fs::exists(base)) << part << " was not sharded";
  }
  auto sharded = load_model_dir(dir);
  ASSERT_TRUE(sharded.drafter);
  auto cache2 = sharded.gpt->new_cache(2);
  EXPECT_TRUE(at::equal(sharded.gpt->prefill(cache2, cond).logits, want));
  if (adtree::io::have_sha256()) {
    EXPECT_NE(sharded.hash, single.hash);  // other files, other bytes
    EXPECT_EQ(load_model_dir(dir).hash, sharded.hash);
  }
  const auto files = adtree::io::safetensors_set_files(dir + "/gpt.safetensors");
  ASSERT_GE(files.size(), 3u) << "the index and at least two shards";
  fs::remove(files[2]);
  EXPECT_NE(load_error(dir).find(files[2] + " is missing"), std::string::npos) << load_error(dir);
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
  EXPECT_NE(msg.find("gpt.safetensors: missing tensor 'layers.0.attention.wo.weight'"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("missing tensor 'norm.weight'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'output.weight' has shape [5, 5], expected [32, 64]"), std::string::npos)
      << msg;
}

// A NaN or an infinity in any part's weights (GPT, draft head, VQ decoder) is a load error naming
// the file and the tensor, not a black picture.
TEST(ModelDir, NonFiniteWeightsAreClearErrors) {
  for (const char* part : {"gpt", "drafter", "vq"}) {
    auto dir = make_model(std::string("nonfinite-") + part);
    const auto path = dir + "/" + part + ".safetensors";
    auto w = adtree::io::SafetensorsReader(path).all();
    std::string name;
    for (const auto& [k, t] : w) {
      if (t.numel() > 4 && at::isFloatingType(t.scalar_type())) name = k;
    }
    ASSERT_FALSE(name.empty()) << part;
    auto bad = w[name].clone();
    bad.view({-1})[3] = std::string(part) == "vq" ? std::numeric_limits<float>::infinity()
                                                  : std::numeric_limits<float>::quiet_NaN();
    w[name] = bad;
    adtree::io::write_safetensors(path, w);
    const auto msg = load_error(dir);
    EXPECT_NE(msg.find(path + ": tensor '" + name + "' holds non-finite values"), std::string::npos)
        << msg;
  }
}

// The value check reads the raw bits of every stored float type (and falls back to libtorch for
// views): a NaN or infinity anywhere in fp32, fp64, bf16 or fp16 weights, the last element
// included.
TEST(ModelDir, NonFiniteValuesAreFoundInEveryFloatType) {
  const std::vector<adtree::model::ParamSpec> spec{{"w", {3, 5}, adtree::model::Init::Zeros, 0.0}};
  for (auto dtype : {at::kFloat, at::kDouble, at::kBFloat16, at::kHalf}) {
    for (double bad :
         {std::numeric_limits<double>::quiet_NaN(), -std::numeric_limits<double>::infinity()}) {
      for (int64_t at_index : {int64_t(0), int64_t(14)}) {
        auto t = at::zeros({3, 5}, dtype);
        EXPECT_TRUE(adtree::model::check_params(spec, {{"w", t}}).empty());
        t.view({-1})[at_index] = bad;
        const auto problems = adtree::model::check_params(spec, {{"w", t}});
        ASSERT_EQ(problems.size(), 1u) << dtype << " " << bad << " at " << at_index;
        EXPECT_NE(problems[0].find("non-finite"), std::string::npos) << problems[0];
      }
    }
    // The largest finite value is finite.
    auto big = at::full({3, 5}, dtype == at::kHalf ? 65504.0 : 3.0e38, dtype);
    EXPECT_TRUE(adtree::model::check_params(spec, {{"w", big}}).empty()) << dtype;
  }
  auto view = at::zeros({5, 3}).t();  // not contiguous
  view[2][4] = std::numeric_limits<float>::infinity();
  EXPECT_EQ(adtree::model::check_params(spec, {{"w", view}}).size(), 1u);
}

TEST(ModelDir, ConfigMismatchesAreListedTogether) {
  auto dir = make_model("config");
  auto j = read_json(dir + "/model.json");
  j["codebook_size"] = 99;
  j["gpt"]["dim"] = 128;  // now every GPT tensor has the wrong shape too
  write_json(dir + "/model.json", j);
  const auto msg = load_error(dir);
  EXPECT_NE(msg.find("gpt.vocab_size 32 differs from codebook_size 99"), std::string::npos) << msg;
  EXPECT_NE(msg.find("vq.codebook_size 32 differs from codebook_size 99"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("'tok_embeddings.weight' has shape [32, 64], expected [32, 128]"),
            std::string::npos)
      << msg;
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
  EXPECT_NE(msg.find("'kind' must be c2i, t2i-words or t2i-embeddings, not 'video'"),
            std::string::npos)
      << msg;
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

// ImageNet-style class names: "name, synonym, synonym"; a synonym may name several classes.
TEST(Vocabulary, ClassesByNumberNameSynonymAndDisambiguatedSynonym) {
  Vocabulary v(Vocabulary::Kind::Classes,
               {"tench, Tinca tinca", "goldfish, Carassius auratus", "crane", "golden retriever",
                "crane", "maillot", "maillot, tank suit"});
  EXPECT_EQ(v.class_id("3"), 3);
  EXPECT_EQ(v.class_id(" Golden Retriever "), 3);
  EXPECT_EQ(v.class_id("goldfish"), 1);
  EXPECT_EQ(v.class_id("Carassius auratus"), 1);
  EXPECT_EQ(v.class_id("goldfish, Carassius auratus"), 1);
  EXPECT_EQ(v.class_id("tank suit"), 6);
  EXPECT_EQ(v.class_id("crane (4)"), 4);
  EXPECT_EQ(v.class_id("crane(2)"), 2);
  try {
    v.class_id("crane");
    ADD_FAILURE() << "an ambiguous synonym must be refused";
  } catch (const adtree::Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("2 (crane)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("4 (crane)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("crane (2)"), std::string::npos) << msg;  // how to write it
  }
  EXPECT_THROW(v.class_id("maillot"), adtree::Error);    // classes 5 and 6
  EXPECT_THROW(v.class_id("crane (3)"), adtree::Error);  // 3 is the retriever
  EXPECT_THROW(v.class_id("7"), adtree::Error);
  EXPECT_THROW(v.class_id("-1"), adtree::Error);
  try {
    v.class_id("golden eagle");
    ADD_FAILURE();
  } catch (const adtree::Error& e) {
    EXPECT_NE(std::string(e.what()).find("golden retriever"), std::string::npos) << e.what();
  }
  // Completion offers synonyms, numbered where a synonym is shared; every one of them parses.
  const auto c = v.complete("cra");
  EXPECT_EQ(c, (std::vector<std::string>{"crane (2)", "crane (4)"}));
  EXPECT_EQ(v.complete("gold"), (std::vector<std::string>{"golden retriever", "goldfish"}));
  for (const auto& p : v.class_prompts()) EXPECT_NO_THROW(v.class_id(p)) << p;
}

TEST(Vocabulary, TheShippedImageNetListHasAThousandParsableClasses) {
  std::ifstream in(std::string(ADTREE_SOURCE_DIR) + "/resources/imagenet/classes.json");
  const auto classes = nlohmann::json::parse(in).at("classes").get<std::vector<std::string>>();
  ASSERT_EQ(classes.size(), 1000u);
  Vocabulary v(Vocabulary::Kind::Classes, classes);
  EXPECT_EQ(v.class_id("tench"), 0);
  EXPECT_EQ(v.class_id("golden retriever"), 207);
  EXPECT_EQ(v.class_id("toilet tissue"), 999);
  for (const auto& p : v.class_prompts()) ASSERT_NO_THROW(v.class_id(p)) << p;
}

// Caption-embedding prompt files (converted LlamaGen t2i models).
namespace {
Gpt embedding_gpt() {
  auto c = GptConfig::preset("micro");
  c.cond = CondKind::Caption;
  c.num_words = 0;
  c.cap_dim = 8;
  c.cond_len = 6;
  return Gpt(c, init_params(gpt_param_specs(c), 3));
}
std::string embedding_file(const std::string& name, const std::map<std::string, at::Tensor>& t) {
  const auto p =
      (fs::path(::testing::TempDir()) / ("adtree_emb_" + name + ".safetensors")).string();
  adtree::io::write_safetensors(p, t);
  return p;
}
std::string condition_error(const Gpt& gpt, const std::string& path) {
  try {
    condition_from_embedding_file(gpt, path, true);
  } catch (const adtree::Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(Conditioning, EmbeddingFileRowsAreLeftPaddedAndPaddingIsZeroAndHidden) {
  const auto gpt = embedding_gpt();
  auto emb = at::randn({4, 8});
  const auto mask = at::tensor(std::vector<int64_t>{1, 1, 0, 0});  // T5-style right padding
  emb[2].fill_(1e6);  // garbage in padded rows must not leak
  const auto cond = condition_from_embedding_file(
      gpt, embedding_file("ok", {{"caption_embedding", emb}, {"caption_mask", mask}}), true);
  ASSERT_EQ(cond.caption.sizes(), (std::vector<int64_t>{2, 6, 8}));
  const auto m = cond.caption_mask;
  EXPECT_TRUE(at::equal(m[0], at::tensor(std::vector<int64_t>{0, 0, 0, 0, 1, 1}).to(at::kBool)));
  EXPECT_TRUE(at::equal(m[0], m[1]));  // the null caption shares the mask, as in LlamaGen
  EXPECT_TRUE(at::allclose(cond.caption[0][4], emb[0]));
  EXPECT_TRUE(at::allclose(cond.caption[0][5], emb[1]));
  EXPECT_EQ(cond.caption[0].narrow(0, 0, 4).abs().sum().item<float>(), 0.f);
  EXPECT_TRUE(at::equal(cond.caption[1], gpt.null_caption()));
  // Through make_condition: the prompt is the file's path; no mask means every row is real.
  Vocabulary none;
  const auto p = embedding_file("nomask", {{"caption_embedding", at::randn({3, 8})}});
  const auto c2 = make_condition(gpt, none, "  " + p + " ", false);
  EXPECT_EQ(c2.caption_mask.sum().item<int64_t>(), 3);
}

TEST(Conditioning, BadEmbeddingFilesAreClearErrors) {
  const auto gpt = embedding_gpt();
  const auto ok_mask = at::ones({2}, at::kLong);
  EXPECT_NE(condition_error(gpt, "/nonexistent/prompt.safetensors").find("is not a file"),
            std::string::npos);
  EXPECT_NE(condition_error(gpt, embedding_file("noemb", {{"x", at::zeros({2, 8})}}))
                .find("no tensor 'caption_embedding'"),
            std::string::npos);
  EXPECT_NE(
      condition_error(gpt, embedding_file("width", {{"caption_embedding", at::zeros({2, 5})}}))
          .find("expected [L, 8]"),
      std::string::npos);
  EXPECT_NE(condition_error(gpt, embedding_file("long", {{"caption_embedding", at::zeros({7, 8})}}))
                .find("L <= 6"),
            std::string::npos);
  EXPECT_NE(condition_error(
                gpt, embedding_file("int", {{"caption_embedding", at::zeros({2, 8}, at::kLong)}}))
                .find("F32, F16 or BF16"),
            std::string::npos);
  EXPECT_NE(condition_error(
                gpt, embedding_file("maskshape", {{"caption_embedding", at::zeros({2, 8})},
                                                  {"caption_mask", at::ones({3}, at::kLong)}}))
                .find("caption_mask has shape"),
            std::string::npos);
  EXPECT_NE(
      condition_error(gpt, embedding_file("maskval", {{"caption_embedding", at::zeros({2, 8})},
                                                      {"caption_mask", 2 * ok_mask}}))
          .find("0 or 1"),
      std::string::npos);
  EXPECT_NE(
      condition_error(gpt, embedding_file("maskfloat", {{"caption_embedding", at::zeros({2, 8})},
                                                        {"caption_mask", at::ones({2})}}))
          .find("integers or bools"),
      std::string::npos);
  EXPECT_NE(condition_error(gpt, embedding_file("empty", {{"caption_embedding", at::zeros({2, 8})},
                                                          {"caption_mask", 0 * ok_mask}}))
                .find("no token"),
            std::string::npos);
  auto nan = at::zeros({2, 8});
  nan[1][3] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_NE(condition_error(gpt, embedding_file("nan", {{"caption_embedding", nan}})).find("NaN"),
            std::string::npos);
  // A class model never reads embedding files.
  auto c = GptConfig::preset("micro");
  c.cond = CondKind::Class;
  const Gpt cls(c, init_params(gpt_param_specs(c), 1));
  EXPECT_THROW(condition_from_embedding_file(cls, "x", false), adtree::Error);
}

TEST(ModelDir, DrafterNormEpsIsReadAndChecked) {
  auto dir = make_model("drafter_eps");
  auto j = read_json(dir + "/model.json");
  ASSERT_TRUE(j.contains("drafter"));
  j["drafter"]["norm_eps"] = "tiny";
  write_json(dir + "/model.json", j);
  EXPECT_NE(load_error(dir).find("drafter.norm_eps"), std::string::npos);
  j["drafter"]["norm_eps"] = 1e-6;
  write_json(dir + "/model.json", j);
  EXPECT_EQ(load_error(dir), "");
}

// The seal of a cached download (adtree data's npm packages): any changed byte, renamed, added or
// removed file changes it; the same files give the same sum.
TEST(Checksum, DirectoryChecksumSeesEveryChange) {
  const fs::path d = fs::path(::testing::TempDir()) / "adtree_dir_checksum";
  fs::remove_all(d);
  fs::create_directories(d / "img");
  std::ofstream(d / "emoji.json") << "[1, 2, 3]";
  std::ofstream(d / "img" / "a.png", std::ios::binary) << std::string(5000, 'x');
  const std::string sealed = adtree::io::directory_checksum(d.string());
  EXPECT_EQ(sealed.size(), 16u);
  EXPECT_EQ(adtree::io::directory_checksum(d.string()), sealed);
  {
    std::fstream f(d / "img" / "a.png", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(2500);
    f.put('y');
  }
  EXPECT_NE(adtree::io::directory_checksum(d.string()), sealed) << "a changed byte";
  std::ofstream(d / "img" / "a.png", std::ios::binary) << std::string(5000, 'x');
  EXPECT_EQ(adtree::io::directory_checksum(d.string()), sealed);
  fs::rename(d / "img" / "a.png", d / "img" / "b.png");
  EXPECT_NE(adtree::io::directory_checksum(d.string()), sealed) << "a renamed file";
  fs::rename(d / "img" / "b.png", d / "img" / "a.png");
  std::ofstream(d / "extra") << "";
  EXPECT_NE(adtree::io::directory_checksum(d.string()), sealed) << "an added empty file";
  fs::remove(d / "extra");
  EXPECT_EQ(adtree::io::directory_checksum(d.string()), sealed);
  EXPECT_THROW(adtree::io::directory_checksum((d / "missing").string()), adtree::Error);
}
