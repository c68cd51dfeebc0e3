// The torch.save() reader (io/torch_checkpoint.h) on files written by Debian's python3-torch
// (tests/data/torch/make_fixtures.py; committed, so no Python is needed here): every dtype, views,
// strides, the legacy format, a re-compressed archive, LlamaGen's layout with its saved
// arguments, and the files it must refuse: a pickle that would run code, damaged archives.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "io/mapped_pages.h"
#include "io/torch_checkpoint.h"
#include "util/error.h"

using namespace adtree;
namespace fs = std::filesystem;

namespace {

std::string fixture(const std::string& name) {
  return std::string(ADTREE_TORCH_FIXTURES) + "/" + name;
}

std::vector<uint8_t> bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), {});
}

std::string error_of(const std::vector<uint8_t>& b, const std::string& name = "file") {
  try {
    io::read_torch_checkpoint(b.data(), b.size(), name);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The values make_fixtures.py gives each name.
void expect_fixture_values(const std::map<std::string, at::Tensor>& t) {
  ASSERT_EQ(t.size(), 14u);
  EXPECT_TRUE(at::equal(t.at("f32"), at::arange(12, at::kFloat).reshape({3, 4})));
  EXPECT_TRUE(at::equal(t.at("f64"), at::arange(3, at::kDouble) / 4));
  EXPECT_TRUE(at::equal(t.at("f16"), at::arange(6, at::kHalf)));
  EXPECT_TRUE(at::equal(t.at("bf16"), at::arange(6, at::kBFloat16) - 2));
  EXPECT_TRUE(at::equal(t.at("i64"), at::arange(5, at::kLong) * -3));
  EXPECT_TRUE(at::equal(t.at("i32"), at::arange(4, at::kInt)));
  EXPECT_TRUE(at::equal(t.at("u8"), at::arange(250, 256, at::kByte)));
  EXPECT_TRUE(at::equal(t.at("flags"), at::tensor({1, 0, 1}).to(at::kBool)));
  const auto base = at::arange(8, at::kFloat).reshape({2, 4});
  EXPECT_TRUE(at::equal(t.at("base"), base));
  EXPECT_TRUE(at::equal(t.at("row1"), base[1]));
  EXPECT_TRUE(at::equal(t.at("col2"), base.select(1, 2)));
  EXPECT_TRUE(at::equal(t.at("t"), at::arange(6, at::kFloat).reshape({2, 3}).t()));
  EXPECT_TRUE(t.at("t").is_contiguous());
  EXPECT_EQ(t.at("scalar").dim(), 0);
  EXPECT_EQ(t.at("scalar").item<float>(), 3.5f);
  EXPECT_EQ(t.at("empty").sizes(), (std::vector<int64_t>{0, 3}));
}

}  // namespace

TEST(TorchCheckpoint, ReadsEveryDtypeViewAndStride) {
  const auto ck = io::read_torch_checkpoint(fixture("state_dict.pt"));
  EXPECT_EQ(ck.found_at, "");
  expect_fixture_values(ck.tensors);
  // Views are not copies: a row of `base` lies in base's storage, as torch saved it.
  EXPECT_EQ(static_cast<const float*>(ck.tensors.at("row1").data_ptr()),
            static_cast<const float*>(ck.tensors.at("base").data_ptr()) + 4);
}

TEST(TorchCheckpoint, FromMemoryTheSameTensors) {
  const auto b = bytes_of(fixture("state_dict.pt"));
  expect_fixture_values(io::read_torch_checkpoint(b.data(), b.size(), "memory").tensors);
}

TEST(TorchCheckpoint, LegacyFormatAndRecompressedArchive) {
  expect_fixture_values(io::read_torch_checkpoint(fixture("legacy.pt")).tensors);
  expect_fixture_values(io::read_torch_checkpoint(fixture("deflated.pt")).tensors);
}

TEST(TorchCheckpoint, LlamaGenLayoutWithSavedArguments) {
  const auto ck = io::read_torch_checkpoint(fixture("llamagen_style.pt"));
  EXPECT_EQ(ck.found_at, "model");
  ASSERT_EQ(ck.tensors.size(), 1u);
  EXPECT_TRUE(at::equal(ck.tensors.at("module.w"), at::ones({2, 2})));
  EXPECT_EQ(ck.args.at("gpt_model"), "GPT-B");
  EXPECT_EQ(ck.args.at("image_size"), 384);
  EXPECT_EQ(ck.args.at("flags"), nlohmann::json::array({1, 2}));
  EXPECT_DOUBLE_EQ(ck.args.at("lr").get<double>(), 1e-4);
  EXPECT_EQ(ck.top_keys, (std::vector<std::string>{"model", "optimizer", "steps", "args"}));
}

TEST(TorchCheckpoint, ParametersAreTheirTensors) {
  const auto ck = io::read_torch_checkpoint(fixture("parameter.pt"));
  EXPECT_TRUE(at::equal(ck.tensors.at("w"), at::arange(4, at::kFloat)));
}

TEST(TorchCheckpoint, NoStateDictNamesTheTopLevelKeys) {
  try {
    io::read_torch_checkpoint(fixture("no_state_dict.pt"));
    ADD_FAILURE() << "a file without tensors must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("top-level keys: steps, note"), std::string::npos)
        << e.what();
  }
}

// A pickle that calls os.system is refused by the global's name, and nothing runs.
TEST(TorchCheckpoint, NeverRunsCode) {
  const fs::path marker = "/tmp/adtree-evil-pickle-ran";
  fs::remove(marker);
  try {
    io::read_torch_checkpoint(fixture("evil.pt"));
    ADD_FAILURE() << "a pickle calling os.system must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'posix.system'"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(marker));
}

TEST(TorchCheckpoint, RefusesOtherFiles) {
  EXPECT_NE(error_of({}).find("not a torch.save() checkpoint"), std::string::npos);
  const std::string json = "{\"model\": 1}";
  EXPECT_NE(error_of({json.begin(), json.end()}).find("not a torch.save() checkpoint"),
            std::string::npos);
  EXPECT_THROW(io::read_torch_checkpoint("/nonexistent/c2i_B_256.pt"), Error);
}

// A damaged copy is an error, or (where nothing read was hit) exactly the same tensors.
bool is_error_or_same(const std::vector<uint8_t>& b, const std::map<std::string, at::Tensor>& want,
                      const std::string& what) {
  std::map<std::string, at::Tensor> got;
  try {
    got = io::read_torch_checkpoint(b.data(), b.size(), "damaged").tensors;
  } catch (const Error&) {
    return true;
  }
  EXPECT_EQ(got.size(), want.size()) << what;
  for (const auto& [name, t] : want) {
    EXPECT_TRUE(got.count(name) && got.at(name).sizes() == t.sizes() &&
                got.at(name).scalar_type() == t.scalar_type() && at::equal(got.at(name), t))
        << what << " changed " << name;
  }
  return false;
}

// Every cut and every flipped byte of the archive: a damaged download never gives other weights.
TEST(TorchCheckpoint, DamagedArchivesAreErrorsNeverOtherWeights) {
  const auto good = bytes_of(fixture("state_dict.pt"));
  const auto want = io::read_torch_checkpoint(good.data(), good.size(), "good").tensors;
  int errors = 0;
  for (size_t n = 0; n < good.size(); n += 7) {
    const std::vector<uint8_t> cut(good.begin(), good.begin() + std::ptrdiff_t(n));
    errors += is_error_or_same(cut, want, "cut at " + std::to_string(n));
  }
  EXPECT_GT(errors, int(good.size() / 7) * 9 / 10);  // all but cuts in the archive's last record
  errors = 0;
  for (size_t k = 0; k < good.size(); ++k) {
    auto b = good;
    b[k] ^= 0x5a;
    errors += is_error_or_same(b, want, "byte " + std::to_string(k));
  }
  EXPECT_GT(errors, int(good.size()) / 2);  // the storages and the pickle are all checked
}
