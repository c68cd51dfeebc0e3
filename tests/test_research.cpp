// The research bench (core/research/sweep.h): grid expansion and de-duplication, shards that
// partition the work exactly, merged shards equal one unsharded run, the EAGLE-2 rows matched to
// ADT-Tree's draft size, the quality measure, and clear errors for bad input.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "decode/likelihood.h"
#include "model/llamagen/gpt_config.h"
#include "model/random_model.h"
#include "research/sweep.h"
#include "util/error.h"

namespace fs = std::filesystem;
using namespace adtree;
using namespace adtree::research;

namespace {

class ResearchTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = (fs::temp_directory_path() / ("adtree_test_research_" + std::to_string(::getpid())))
               .string();
    auto g = model::GptConfig::preset("micro");
    model::write_random_model(dir_, g, model::small_vq_config(g.vocab_size, g.grid_h), 4,
                              "research");
    bundle_ = new model::ModelBundle(model::load_model_dir(dir_));
  }
  static void TearDownTestSuite() {
    delete bundle_;
    fs::remove_all(dir_);
  }
  static SweepGrid grid() {
    SweepGrid g;
    g.methods = {"adt", "dynamic", "ar"};
    g.axes["temperature"] = {0.0, 1.0};
    g.axes["adt.beta"] = {0.25, 0.75};
    g.base.dynamic_tree.budget = 8;
    g.sampling.cfg_scale = 2.0;
    return g;
  }
  static std::vector<nlohmann::json> run(const std::vector<SweepPoint>& pts, Shard shard,
                                         bool match = false) {
    SweepOptions o;
    o.prompts = {"a red", "cat"};
    o.seeds = 2;
    o.shard = shard;
    o.match_drafted = match;
    std::vector<nlohmann::json> rows;
    run_sweep(*bundle_, pts, o, [&](const nlohmann::json& r) { rows.push_back(r); });
    return rows;
  }
  static std::string dir_;
  static model::ModelBundle* bundle_;
};
std::string ResearchTest::dir_;
model::ModelBundle* ResearchTest::bundle_ = nullptr;

}  // namespace

TEST_F(ResearchTest, AxesApplyOnlyToTheMethodsThatReadThem) {
  const auto pts = expand(grid());
  // adt: 2 T x 2 beta; dynamic and ar: 2 T each (beta does not split them).
  ASSERT_EQ(pts.size(), 8u);
  std::set<std::string> labels;
  for (const auto& p : pts) labels.insert(p.label);
  EXPECT_EQ(labels.size(), pts.size());
  EXPECT_TRUE(labels.count("adt T=0 beta=0.25"));
  EXPECT_TRUE(labels.count("dynamic T=1"));
  EXPECT_FALSE(labels.count("dynamic T=1 beta=0.25"));
  for (const auto& p : pts) {
    if (p.label == "adt T=1 beta=0.75") {
      EXPECT_DOUBLE_EQ(p.method.adt.beta, 0.75);
      EXPECT_DOUBLE_EQ(p.sampling.temperature, 1.0);
    }
  }
  SweepGrid g;
  g.methods = {"adt"};
  g.axes["adt.mode"] = {std::string("bisect"), std::string("step")};
  g.axes["adt.step_d"] = {int64_t(1), int64_t(2)};
  // Step sizes split only step mode: bisect + step x 2.
  EXPECT_EQ(expand(g).size(), 3u);
  g.methods.clear();
  EXPECT_THROW(expand(g), Error);
  SweepGrid bad;
  bad.axes["adt.adjacency"] = {std::string("sideways")};
  EXPECT_THROW(expand(bad), Error);
}

TEST_F(ResearchTest, ShardsPartitionTheUnitsAndMergeToTheWholeRun) {
  const auto pts = expand(grid());
  const auto whole = run(pts, Shard{});
  ASSERT_EQ(whole.size(), pts.size() * 2 * 2);
  const auto a = run(pts, Shard::parse("0/3")), b = run(pts, Shard::parse("1/3")),
             c = run(pts, Shard::parse("2/3"));
  EXPECT_EQ(a.size() + b.size() + c.size(), whole.size());
  const auto merged = merge_rows({a, b, c});
  const auto ref = merge_rows({whole});
  ASSERT_EQ(merged.size(), ref.size());
  for (size_t i = 0; i < ref.size(); ++i) {
    EXPECT_EQ(row_key(merged[i]), row_key(ref[i]));
    // Decoding is deterministic: the same tokens, so the same tau and likelihood.
    EXPECT_EQ(merged[i]["tau"], ref[i]["tau"]) << row_key(ref[i]);
    EXPECT_DOUBLE_EQ(merged[i]["nll"].get<double>(), ref[i]["nll"].get<double>());
  }
  for (const auto& r : whole) {
    // Lossless at greedy: every method's tokens are AR's, so the same likelihood too.
    if (r["temperature"].get<double>() == 0) {
      EXPECT_TRUE(r["identical_to_ar"].get<bool>()) << row_key(r);
      EXPECT_NEAR(r["nll_delta"].get<double>(), 0.0, 1e-9);
    }
    EXPECT_GT(r["speedup"].get<double>(), 0.0);
  }
  const auto summary = summarize(whole);
  EXPECT_EQ(summary.size(), pts.size());
  const auto table = markdown_table(summary);
  EXPECT_NE(table.find("| adt T=0 beta=0.25 | 4 |"), std::string::npos) << table;
  EXPECT_NE(table.find("100%"), std::string::npos);
}

TEST_F(ResearchTest, MatchedEagle2UsesAdtTreesDraftSize) {
  SweepGrid g;
  g.methods = {"adt"};
  g.axes["temperature"] = {1.0};
  g.base.dynamic_tree.budget = 8;
  g.sampling.cfg_scale = 2.0;
  const auto rows = run(expand(g), Shard{}, /*match=*/true);
  ASSERT_EQ(rows.size(), 8u);  // 4 adt rows, each followed by its matched EAGLE-2 row
  for (size_t i = 0; i < rows.size(); i += 2) {
    EXPECT_EQ(rows[i]["method"], "adt");
    EXPECT_EQ(rows[i + 1]["method"], "dynamic");
    EXPECT_EQ(rows[i + 1]["matched_budget"].get<int64_t>(),
              std::max<int64_t>(1, std::llround(rows[i]["mean_drafted"].get<double>())));
    EXPECT_EQ(rows[i + 1]["prompt"], rows[i]["prompt"]);
    EXPECT_EQ(rows[i + 1]["seed"], rows[i]["seed"]);
  }
}

TEST_F(ResearchTest, LikelihoodIsTheMeanNegativeLogProbability) {
  // A hand check on two tokens: prefill logits predict token 0, the token-0 forward predicts 1.
  const auto& gpt = *bundle_->gpt;
  decode::SamplingParams sp;
  sp.cfg_scale = 1.0;  // no CFG: one condition row
  auto cond = model::make_condition(gpt, bundle_->vocab, "cat", false);
  const std::vector<int64_t> toks{3, 7};
  auto cache = gpt.new_cache(1, 4);
  auto l0 = gpt.prefill(cache, cond).logits;
  auto l1 = gpt.forward_tokens(cache, at::tensor(std::vector<int64_t>{3}).view({1, 1}), 0).logits;
  const double p0 = at::softmax(l0[0][l0.size(1) - 1], -1)[3].item<double>();
  const double p1 = at::softmax(l1[0][0], -1)[7].item<double>();
  EXPECT_NEAR(decode::sequence_nll(gpt, cond, toks, sp), -(std::log(p0) + std::log(p1)) / 2, 1e-5);
  EXPECT_THROW(decode::sequence_nll(gpt, cond, {}, sp), Error);
  EXPECT_THROW(decode::sequence_nll(gpt, cond, {100000}, sp), Error);
}

TEST_F(ResearchTest, BadShardsAndBrokenRowFilesAreRefused) {
  for (const char* s : {"3/3", "-1/2", "1", "a/b", "1/0", "0/2x"}) {
    EXPECT_THROW(Shard::parse(s), Error) << s;
  }
  EXPECT_EQ(Shard::parse("2/5").index, 2);
  const auto path = dir_ + "/broken.jsonl";
  std::ofstream(path) << "{\"label\":\"adt\",\"prompt\":\"cat\",\"seed\":0}\n{not json\n";
  try {
    read_jsonl(path);
    ADD_FAILURE() << "a broken line was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_jsonl(dir_ + "/missing.jsonl"), Error);
  SweepOptions o;  // no prompts
  EXPECT_THROW(run_sweep(*bundle_, expand(grid()), o, [](const nlohmann::json&) {}), Error);
}
