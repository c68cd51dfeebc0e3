// Weights in shards (the Hugging Face layout): they round-trip bit-exactly across files of at most
// the limit, the writer leaves one layout, and every inconsistency of an index and its shards is an
// error naming the file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/safetensors.h"
#include "io/safetensors_shards.h"
#include "util/error.h"

using namespace adtree::io;
namespace fs = std::filesystem;

namespace {
class ShardsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) /
           ("adtree_shards_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    at::manual_seed(1);
    // 400, 400, 40, 4000 (one tensor above the limit below) and 8 bytes.
    tensors_ = {{"a.weight", at::randn({10, 10})},
                {"b.weight", at::randn({100}).to(at::kHalf).repeat(2)},
                {"c.bias", at::randn({10})},
                {"d.big", at::randn({1000})},
                {"e.ids", at::arange(1, at::kLong)}};
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string base() const { return (dir_ / "gpt.safetensors").string(); }
  std::string index() const { return base() + ".index.json"; }
  nlohmann::json read_index() const {
    std::ifstream in(index());
    return nlohmann::json::parse(in);
  }
  void write_index(const nlohmann::json& j) const { std::ofstream(index()) << j.dump(); }
  std::string error() const {
    try {
      map_safetensors_set(base());
    } catch (const adtree::Error& e) {
      return e.what();
    }
    return "";
  }
  fs::path dir_;
  std::map<std::string, at::Tensor> tensors_;
};

TEST_F(ShardsTest, RoundTripAcrossShardsOfAtMostTheLimit) {
  write_safetensors_set(base(), tensors_, 1000, {{"format", "adtree"}});
  EXPECT_FALSE(fs::exists(base()));
  const auto files = safetensors_set_files(base());
  // In name order while they fit: {a, b, c} (840 bytes), {d} (4000, alone), {e}.
  ASSERT_EQ(files.size(), 4u) << "the index and 3 shards";
  const auto j = read_index();
  EXPECT_EQ(j["metadata"]["total_size"].get<uint64_t>(), 400u + 400u + 40u + 4000u + 8u);
  EXPECT_EQ(j["weight_map"]["a.weight"], "gpt-00001-of-00003.safetensors");
  EXPECT_EQ(j["weight_map"]["d.big"], "gpt-00002-of-00003.safetensors");
  for (size_t i = 1; i < files.size(); ++i) {
    SafetensorsReader r(files[i]);
    uint64_t bytes = 0;
    for (const auto& t : r.tensors()) bytes += t.end - t.begin;
    EXPECT_TRUE(bytes <= 1000 || r.tensors().size() == 1) << files[i];
    EXPECT_EQ(r.metadata().at("format"), "adtree");
  }
  const auto back = map_safetensors_set(base());
  ASSERT_EQ(back.size(), tensors_.size());
  for (const auto& [name, t] : tensors_) {
    EXPECT_EQ(back.at(name).scalar_type(), t.scalar_type()) << name;
    EXPECT_TRUE(at::equal(back.at(name), t)) << name;
  }
  // Written again under a limit it fits: one file, and no index or shard left behind.
  write_safetensors_set(base(), tensors_, 1 << 20);
  EXPECT_TRUE(fs::exists(base()));
  EXPECT_FALSE(fs::exists(index()));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
  EXPECT_EQ(map_safetensors_set(base()).size(), tensors_.size());
  // And into shards again: the single file goes.
  write_safetensors_set(base(), tensors_, 500);
  EXPECT_FALSE(fs::exists(base()));
  EXPECT_EQ(map_safetensors_set(base()).size(), tensors_.size());
}

TEST_F(ShardsTest, InconsistentShardSetsAreClearErrors) {
  EXPECT_NE(error().find("does not exist"), std::string::npos) << error();
  write_safetensors_set(base(), tensors_, 1000);
  const auto good = read_index();
  auto j = good;
  j["weight_map"]["c.bias"] = "gpt-00002-of-00003.safetensors";  // it lives in shard 1
  write_index(j);
  EXPECT_NE(error().find("which the index puts elsewhere"), std::string::npos) << error();
  j = good;
  j["weight_map"]["z.missing"] = "gpt-00003-of-00003.safetensors";
  write_index(j);
  EXPECT_NE(error().find("\"z.missing\" is not in its shard"), std::string::npos) << error();
  j = good;
  j["weight_map"]["a.weight"] = "../elsewhere.safetensors";
  write_index(j);
  EXPECT_NE(error().find("names no plain shard file"), std::string::npos) << error();
  j = good;
  j["metadata"]["total_size"] = 12;
  write_index(j);
  EXPECT_NE(error().find("total_size does not match"), std::string::npos) << error();
  std::ofstream(index()) << "{\"weight_map\": ";
  EXPECT_NE(error().find("not valid JSON"), std::string::npos) << error();
  write_index(good);
  EXPECT_EQ(error(), "");
  fs::remove(dir_ / "gpt-00002-of-00003.safetensors");
  EXPECT_NE(error().find("gpt-00002-of-00003.safetensors is missing"), std::string::npos)
      << error();
  write_safetensors_set(base(), tensors_, 1000);
  write_safetensors(base(), tensors_);
  EXPECT_NE(error().find("both exist"), std::string::npos) << error();
}

}  // namespace
