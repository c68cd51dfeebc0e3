// Inputs that the fuzz targets (fuzz/, tools/fuzz.sh) found or that guard the limits added for them
// (docs/reliability.md "Fuzzing"), fed to the same core functions as the targets: each must be
// rejected with adtree::Error (never a crash, a sanitizer report or a huge allocation). The file
// name's prefix names the target: safetensors-, manifest-, run_file-, settings-.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "decode/method.h"
#include "decode/sampling.h"
#include "decode/stats.h"
#include "io/manifest.h"
#include "io/safetensors.h"
#include "model/gpt.h"
#include "model/vq.h"
#include "util/error.h"

namespace {

namespace fs = std::filesystem;
using namespace adtree;

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

// Each returns normally only if every step accepted the input.
void safetensors(const std::string& bytes) {
  const io::SafetensorsReader r(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(),
                                "regression.safetensors");
  (void)r.all();
}

void manifest(const std::string& text) {
  const auto m = io::Manifest::parse(text, "model.json");
  const auto g = model::GptConfig::from_json(m.gpt);
  (void)model::gpt_param_specs(g);
  const auto v = model::VqConfig::from_json(m.vq);
  (void)model::vq_param_specs(v, true);
}

void run_file(const std::string& text) {
  const auto j = nlohmann::json::parse(text);
  const auto stats = decode::RunStats::from_json(j);
  decode::validate_run(stats, decode::run_tokens_from_json(j));
}

void settings(const std::string& text) {
  const auto j = nlohmann::json::parse(text);
  const auto m = decode::MethodSettings::from_json(j);
  m.validate(16384, 256);
  const auto p = decode::SamplingParams::from_json(j.value("sampling", nlohmann::json()),
                                                   decode::SamplingParams{});
  p.validate(16384);
}

TEST(FuzzRegressions, EveryInputIsAnError) {
  const fs::path dir = ADTREE_FUZZ_REGRESSIONS;
  int count = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    const std::string bytes = read_bytes(e.path());
    SCOPED_TRACE(name);
    void (*check)(const std::string&) = nullptr;
    if (starts_with(name, "safetensors-")) check = safetensors;
    if (starts_with(name, "manifest-")) check = manifest;
    if (starts_with(name, "run_file-")) check = run_file;
    if (starts_with(name, "settings-")) check = settings;
    ASSERT_NE(check, nullptr) << "unknown prefix";
    EXPECT_THROW(check(bytes), Error);
    ++count;
  }
  EXPECT_GE(count, 12);
}

// The seeds are real files (written by this project): each must load without an error.
TEST(FuzzRegressions, SeedsAreAccepted) {
  const fs::path corpus = ADTREE_FUZZ_CORPUS;
  for (const auto& e : fs::directory_iterator(corpus / "fuzz_safetensors")) {
    SCOPED_TRACE(e.path().string());
    EXPECT_NO_THROW(safetensors(read_bytes(e.path())));
  }
  for (const auto& e : fs::directory_iterator(corpus / "fuzz_manifest")) {
    SCOPED_TRACE(e.path().string());
    EXPECT_NO_THROW(manifest(read_bytes(e.path())));
  }
  for (const auto& e : fs::directory_iterator(corpus / "fuzz_run_file")) {
    SCOPED_TRACE(e.path().string());
    EXPECT_NO_THROW(run_file(read_bytes(e.path())));
  }
  for (const auto& e : fs::directory_iterator(corpus / "fuzz_settings")) {
    if (e.path().extension() != ".json") continue;  // prompt-*.txt are prompts
    SCOPED_TRACE(e.path().string());
    EXPECT_NO_THROW(settings(read_bytes(e.path())));
  }
}

}  // namespace
