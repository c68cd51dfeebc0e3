// Fuzzes what a picture brings in when it is dropped on the studio or given to `adtree generate
// --from-png`: imaging::png_text (the walk over the PNG's chunks, tEXt and uncompressed iTXt) and,
// where the settings chunk is there, its JSON through check_picture_settings and the method and
// sampling parsers, as the CLI reads it. Bad input must end in adtree::Error (or a JSON parse
// error), never a crash, an overflow or a read past the bytes.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "decode/sampling.h"
#include "decode/settings/method.h"
#include "decode/settings/picture_settings.h"
#include "imaging/png_text.h"
#include "util/error.h"

namespace {
void settings(const std::string& text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    return;  // not JSON: the CLI says so
  }
  try {
    adtree::decode::check_picture_settings(j);
    (void)adtree::decode::MethodSettings::from_json(
        j.value("method_settings", nlohmann::json::object()));
    (void)adtree::decode::SamplingParams::from_json(j.value("sampling", nlohmann::json()),
                                                    adtree::decode::SamplingParams{});
  } catch (const adtree::Error&) {
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    const auto text = adtree::imaging::png_text(bytes, adtree::imaging::kSettingsKeyword);
    if (text) settings(*text);
    (void)adtree::imaging::png_with_text(bytes, "fuzz", "text");
  } catch (const adtree::Error&) {
  }
  return 0;
}
