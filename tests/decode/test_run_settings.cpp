// A run's settings as a type (core/decode/settings/run_settings.h): they survive their JSON, files
// of older versions read with the defaults they meant, bad files are refused by name, and
// prepare_run is the one place a generation's request is checked against the model and given its
// identity.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "decode/run.h"
#include "decode/settings/run_settings.h"
#include "model/llamagen/gpt_config.h"
#include "model/random_model.h"
#include "util/error.h"

namespace fs = std::filesystem;
using namespace adtree;
using namespace adtree::decode;

namespace {

std::string settings_error_of(const nlohmann::json& j) {
  try {
    RunSettings::from_json(j);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(RunSettings, RoundTripsThroughItsJson) {
  RunSettings s;
  s.request.method.method = Method::Adt;
  s.request.method.adt.beta = 0.75;
  s.request.sampling.temperature = 0.5;
  s.request.seed = uint64_t(1) << 63;  // above int64: JSON holds it unsigned
  s.prompt = "a red cat";
  s.model_dir = "/models/emoji", s.model_name = "emoji", s.model_hash = "sha256:ab";
  s.device = "cuda:1", s.dtype = "bf16", s.threads = 2;
  s.verify = "coupled", s.budget = 12, s.lantern = true, s.relax = Acceptance::Lantern;
  s.lossless = false, s.device_step = true, s.fixed_shapes = true, s.graphs = 3;
  s.ran_as_ar = "no tree pays", s.ar_estimate_ms = 512.5;
  const auto b = RunSettings::from_json(nlohmann::json::parse(s.to_json().dump()));
  EXPECT_EQ(b.to_json(), s.to_json());
  EXPECT_EQ(b.method(), Method::Adt);
  EXPECT_EQ(b.request.method.adt.beta, 0.75);
  EXPECT_EQ(b.request.seed, uint64_t(1) << 63);
  EXPECT_EQ(b.relax, Acceptance::Lantern);
  EXPECT_EQ(b.ran_as_ar, "no tree pays");
}

TEST(RunSettings, OlderFilesReadWithTheirDefaultsAndBadOnesAreRefusedByName) {
  // An AR run of an older version: no method_settings, no lossless.
  const auto ar = RunSettings::from_json({{"method", "ar"}, {"seed", 4}});
  EXPECT_EQ(ar.method(), Method::Ar);
  EXPECT_TRUE(ar.lossless);
  EXPECT_EQ(ar.request.seed, 4u);
  EXPECT_FALSE(RunSettings::from_json({{"method", "sjd"}}).lossless);
  EXPECT_EQ(settings_error_of(nlohmann::json::array()), "the run's settings are not a JSON object");
  EXPECT_EQ(settings_error_of({{"seed", 1}}), "the run does not say which method made it");
  EXPECT_EQ(settings_error_of({{"method", "ar"}, {"seed", -5}}),
            "the run's seed must be a non-negative integer");
  EXPECT_NE(settings_error_of({{"method", "ar"}, {"lossless", "yes"}}).find("'lossless'"),
            std::string::npos);
  EXPECT_NE(settings_error_of({{"method", "medusa"}}).find("unknown method 'medusa'"),
            std::string::npos);
}

TEST(RunSettings, PrepareRunChecksTheRequestAndNamesTheModel) {
  const auto dir =
      (fs::temp_directory_path() / ("adtree_run_settings_" + std::to_string(::getpid()))).string();
  auto g = model::GptConfig::preset("micro");
  model::write_random_model(dir, g, model::small_vq_config(g.vocab_size, g.grid_h), 0, "no head");
  {  // a model without a draft head
    fs::remove(fs::path(dir) / "drafter.safetensors");
    std::ifstream in(fs::path(dir) / "model.json");
    auto manifest = nlohmann::json::parse(in);
    manifest.erase("drafter");
    std::ofstream(fs::path(dir) / "model.json") << manifest.dump();
  }
  const auto m = model::load_model_dir(dir);
  ASSERT_FALSE(m.drafter);
  model::LoadOptions where;
  where.dtype = "fp32";
  DecodeRequest r;
  r.seed = 7;
  const auto run = prepare_run(m, r, "a red cat", where);
  EXPECT_EQ(run.prompt, "a red cat");
  EXPECT_EQ(run.model_dir, m.dir);
  EXPECT_EQ(run.model_hash, m.hash);
  EXPECT_EQ(run.model_name, m.manifest.name);
  EXPECT_EQ(run.device, "cpu");
  EXPECT_EQ(run.request.seed, 7u);
  EXPECT_GT(run.threads, 0);
  // The checks every front end shares, before anything runs.
  r.method.method = Method::Adt;
  try {
    prepare_run(m, r, "cat", where);
    ADD_FAILURE() << "adt ran without a draft head";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs a draft head"), std::string::npos) << e.what();
  }
  r.method.method = Method::Sjd;
  r.method.jacobi.window = 0;
  EXPECT_THROW(prepare_run(m, r, "cat", where), Error);
  r.method.jacobi.window = 4;
  r.sampling.temperature = -1;
  EXPECT_THROW(prepare_run(m, r, "cat", where), Error);
  // The result of a prepared run carries the identity into its statistics.
  r.sampling.temperature = 0;
  const auto cond = model::make_condition(*m.gpt, m.vocab, "cat", r.sampling.uses_cfg());
  const auto res = run_decode(m, cond, prepare_run(m, r, "cat", where));
  EXPECT_EQ(res.stats.settings.prompt, "cat");
  EXPECT_EQ(res.stats.settings.model_hash, m.hash);
  EXPECT_EQ(res.stats.settings.method(), Method::Sjd);
  fs::remove_all(dir);
}
