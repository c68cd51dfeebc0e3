// Inputs that the fuzz targets (fuzz/, tools/fuzz.sh) found or that guard the limits added for them
// (docs/reliability.md "Fuzzing"), fed to the same core functions as the targets: each must be
// rejected with adtree::Error (never a crash, a sanitizer report or a huge allocation). The file
// name's prefix names the target: safetensors-, manifest-, run_file-, settings-, png_text-,
// torch_checkpoint-, pack_cache-.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "decode/sampling.h"
#include "decode/settings/method.h"
#include "decode/settings/picture_settings.h"
#include "decode/stats/stats.h"
#include "imaging/png_text.h"
#include "io/manifest.h"
#include "io/safetensors.h"
#include "io/torch_checkpoint.h"
#include "model/cpu/pack_cache.h"
#include "model/llamagen/gpt.h"
#include "model/llamagen/vq.h"
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
  p.validate(16384, 256);
}

void torch_checkpoint(const std::string& bytes) {
  (void)io::read_torch_checkpoint(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(),
                                  "regression.pt");
}

void pack_cache(const std::string& bytes) {
  const io::SafetensorsReader r(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(),
                                "regression-cache.safetensors");
  auto meta = r.metadata();
  const auto e = model::check_pack_cache(meta, r.all(), meta["model_hash"], meta["dtype"]);
  if (e.panels.empty()) throw Error("not a cache of this format");
}

// A picture's settings as `adtree generate --from-png` reads them; a PNG without them is an error
// there too.
void png_settings(const std::string& bytes) {
  const auto text = imaging::png_text(bytes, imaging::kSettingsKeyword);
  if (!text) throw Error("no settings chunk");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(*text);
  } catch (const nlohmann::json::exception&) {
    throw Error("not JSON");
  }
  decode::check_picture_settings(j);
  const auto m = decode::MethodSettings::from_json(j.value("method_settings", nlohmann::json()));
  const auto p = decode::SamplingParams::from_json(j.value("sampling", nlohmann::json()),
                                                   decode::SamplingParams{});
  m.validate(16384, 256);
  p.validate(16384, 256);
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
    if (starts_with(name, "png_text-")) check = png_settings;
    if (starts_with(name, "torch_checkpoint-")) check = torch_checkpoint;
    if (starts_with(name, "pack_cache-")) check = pack_cache;
    ASSERT_NE(check, nullptr) << "unknown prefix";
    EXPECT_THROW(check(bytes), Error);
    ++count;
  }
  EXPECT_GE(count, 17);
}

// The seeds are real files (written by this project): each must load without an error, and every
// target has some (an empty or missing corpus fails here, not silently).
TEST(FuzzRegressions, SeedsAreAccepted) {
  const fs::path corpus = ADTREE_FUZZ_CORPUS;
  auto each = [&](const char* target, const char* ext, void (*check)(const std::string&)) {
    int n = 0;
    for (const auto& e : fs::directory_iterator(corpus / target)) {
      if (ext && e.path().extension() != ext) continue;
      if (e.path().filename().string().rfind("plain", 0) == 0) continue;  // no settings chunk
      SCOPED_TRACE(e.path().string());
      EXPECT_NO_THROW(check(read_bytes(e.path())));
      ++n;
    }
    EXPECT_GT(n, 0) << target << ": no seeds";
  };
  each("fuzz_safetensors", nullptr, safetensors);
  each("fuzz_manifest", nullptr, manifest);
  each("fuzz_run_file", nullptr, run_file);
  each("fuzz_settings", ".json", settings);  // prompt-*.txt are prompts
  each("fuzz_png_text", ".png", png_settings);
  each("fuzz_torch_checkpoint", nullptr, torch_checkpoint);
  each("fuzz_pack_cache", nullptr, pack_cache);
}

}  // namespace
