// The model the app ships (resources/models/emoji): it loads with the product's loader, every
// method generates a full image on it, and greedy decoding is token-identical to AR for every
// lossless method on the real trained weights (not only on the random test models).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <set>
#include <string>

#include "decode/run.h"
#include "decode/settings/method_table.h"
#include "model/conditioning.h"
#include "model/continuous/continuous_dir.h"
#include "model/model_dir.h"

using namespace adtree;

namespace {

const model::ModelBundle& shipped() {
  // Loaded once for the whole file; a missing or broken shipped model fails every test here.
  static const model::ModelBundle bundle = model::load_model_dir(ADTREE_SHIPPED_MODEL);
  return bundle;
}

decode::DecodeRequest request(const std::string& method, double temperature, uint64_t seed) {
  decode::DecodeRequest r;
  r.method.method = adtree::decode::method_from_string(method);
  r.sampling.cfg_scale = 3.0;
  r.sampling.temperature = temperature;
  r.seed = seed;
  return r;
}

}  // namespace

TEST(ShippedModel, LoadsWithDrafterVqAndVocabulary) {
  const auto& m = shipped();
  ASSERT_TRUE(m.gpt);
  ASSERT_TRUE(m.vq);
  ASSERT_TRUE(m.drafter) << "the shipped model must carry its EAGLE head";
  EXPECT_EQ(m.gpt_config.grid_h * m.gpt_config.grid_w, 256);
  EXPECT_GT(m.vocab.size(), 1000);
  // The whole directory stays within the 40 MB the issue allows.
  uint64_t bytes = 0;
  for (const auto& e : std::filesystem::directory_iterator(ADTREE_SHIPPED_MODEL))
    if (e.is_regular_file()) bytes += e.file_size();
  EXPECT_LE(bytes, 40u * 1000 * 1000);
}

TEST(ShippedModel, EveryMethodGeneratesAFullImage) {
  const auto& m = shipped();
  auto cond = model::make_condition(*m.gpt, m.vocab, "red apple noto", true);
  for (const char* method : {"ar", "static", "dynamic", "adt", "sjd", "pathspec"}) {
    auto res = decode::run_decode(m, cond, request(method, 1.0, 7));
    ASSERT_EQ(res.tokens.size(), 256u) << method;
    EXPECT_GE(res.stats.summary.tau, 1.0) << method;
    auto codes = at::tensor(res.tokens, at::kLong).view({1, -1});
    auto img = m.vq->decode(codes, m.gpt_config.grid_h, m.gpt_config.grid_w);
    EXPECT_EQ(img.size(-1), 64) << method;
    EXPECT_TRUE(img.isfinite().all().item<bool>()) << method;
  }
}

// The picture decoder the CLI and the studio run (model/llamagen/vq_decoder.h) against the
// reference, on the shipped model's trained tokenizer and a real picture's tokens: fp32 gives the
// same bytes (rounding aside), bf16 stays within the distance docs/PERFORMANCE.md states.
TEST(ShippedModel, FastPictureDecoderMatchesTheReference) {
  const auto& m = shipped();
  auto cond = model::make_condition(*m.gpt, m.vocab, "red apple noto", true);
  const auto res = decode::run_decode(m, cond, request("ar", 1.0, 3));
  const auto codes = at::tensor(res.tokens, at::kLong).view({1, -1});
  const int64_t h = m.gpt_config.grid_h, w = m.gpt_config.grid_w;
  const auto ref = model::VqModel::to_bytes(m.vq->decode(codes, h, w)).to(at::kInt);
  for (auto p : {model::VqPrecision::Fp32, model::VqPrecision::Bf16}) {
    const model::VqDecoder dec(m.vq, p);
    const auto got = model::VqModel::to_bytes(dec.decode(codes, h, w)).to(at::kInt);
    const auto diff = (got - ref).abs();
    const int max = diff.max().item<int>();
    const float mean = diff.to(at::kFloat).mean().item<float>();
    std::printf("%s decoder: bytes differ by at most %d, %.3f on average\n",
                model::to_string(p).c_str(), max, mean);
    EXPECT_LE(max, p == model::VqPrecision::Fp32 ? 1 : 4) << model::to_string(p);
    EXPECT_LE(mean, p == model::VqPrecision::Fp32 ? 0.01f : 0.5f) << model::to_string(p);
  }
}

TEST(ShippedModel, GreedyIsTokenIdenticalToArForEveryLosslessMethod) {
  const auto& m = shipped();
  for (const char* prompt : {"grinning face noto", "red apple twemoji"}) {
    auto cond = model::make_condition(*m.gpt, m.vocab, prompt, true);
    auto ar = decode::run_decode(m, cond, request("ar", 0.0, 0));
    for (const char* method : {"static", "dynamic", "adt", "sjd"}) {
      auto res = decode::run_decode(m, cond, request(method, 0.0, 0));
      EXPECT_EQ(res.tokens, ar.tokens) << method << " on '" << prompt << "'";
    }
  }
}

TEST(ShippedModel, EveryModelInTheResourcesLoads) {
  // The default model, the earlier ones kept for the research docs (emoji-v1 to emoji-v3) and the
  // continuous family's emoji-continuous all ship in the package, so each must load, carry its head
  // and name itself as its folder does (a continuous-family model: load and name itself).
  const auto root = std::filesystem::path(ADTREE_SHIPPED_MODEL).parent_path();
  std::set<std::string> models;
  for (const auto& e : std::filesystem::directory_iterator(root)) {
    if (!e.is_directory()) continue;
    models.insert(e.path().filename().string());
    if (model::is_continuous_dir(e.path().string())) {  // the continuous family's: AR and CSpD
      const auto c = model::load_continuous_dir(e.path().string());
      EXPECT_EQ(c.manifest.at("name"), e.path().filename().string());
      continue;
    }
    const auto m = model::load_model_dir(e.path().string());
    EXPECT_TRUE(m.drafter) << e.path();
    EXPECT_EQ(m.manifest.name, e.path().filename().string());
    auto cond = model::make_condition(*m.gpt, m.vocab, "grinning face noto", true);
    auto res = decode::run_decode(m, cond, request("adt", 0.0, 0));
    EXPECT_EQ(res.tokens.size(), 256u) << e.path();
  }
  for (const char* name : {"emoji", "emoji-v1", "emoji-v2", "emoji-v3", "emoji-continuous"}) {
    EXPECT_EQ(models.count(name), 1u) << name << " is missing from " << root;
  }
}

// On a curve where no block of drafts costs less per token than one step (docs/sweeps/
// cost-curve-steep.json: a block of q rows costs q steps), the cost rule runs AR itself, which
// says so; on a curve where blocks are cheaper per token, it drafts.
TEST(ShippedModel, CostRuleRunsArWhereNoTreeCanPay) {
  const auto& m = shipped();
  auto cond = model::make_condition(*m.gpt, m.vocab, "rocket noto", true);
  auto ar = decode::run_decode(m, cond, request("ar", 1.0, 5));
  auto r = request("adt", 1.0, 5);
  r.method.adt.cost_curve = std::string(ADTREE_SOURCE_DIR) + "/docs/sweeps/cost-curve-steep.json";
  auto res = decode::run_decode(m, cond, r);
  EXPECT_EQ(res.tokens, ar.tokens);
  EXPECT_EQ(res.stats.method, "ar");
  EXPECT_EQ(res.stats.settings.ran_as_ar, decode::kNoTreePays);
  EXPECT_EQ(decode::to_string(res.stats.settings.method()), "adt");
  r.method.adt.cost_curve = std::string(ADTREE_SOURCE_DIR) + "/docs/sweeps/cost-curve-h200.json";
  auto drafted = decode::run_decode(m, cond, r);
  EXPECT_EQ(drafted.tokens, ar.tokens);
  EXPECT_EQ(drafted.stats.method, "adt");
  EXPECT_TRUE(drafted.stats.settings.ran_as_ar.empty());
}
