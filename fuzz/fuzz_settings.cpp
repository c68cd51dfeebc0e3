// Fuzzes what users type or paste as settings, on the same bytes two ways:
//  - as JSON: decode::MethodSettings::from_json + validate (method, tree, ADT, LANTERN, Jacobi
//    settings, as a run file's "settings" or a saved GUI state carries them) and
//    SamplingParams::from_json + validate (its "sampling" object), against the vocabulary and grid
//    sizes of the micro test model, the shipped emoji model and LlamaGen;
//  - as a prompt: model::Vocabulary's word parser (split_words, encode_words, which must name the
//    unknown words) and class-name parser, and prompt completion, on a small fixed vocabulary.
// Bad input must end in adtree::Error (or a JSON parse error), never a crash or an overflow.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "decode/sampling.h"
#include "decode/settings/method.h"
#include "model/conditioning.h"
#include "util/error.h"

namespace {
const adtree::model::Vocabulary& words() {
  static const adtree::model::Vocabulary v(adtree::model::Vocabulary::Kind::Words,
                                           {"red", "apple", "rocket", "noto", "twemoji", "Smiling",
                                            "face", "with", "heart", "eyes", "2", "x3"});
  return v;
}
const adtree::model::Vocabulary& classes() {
  static const adtree::model::Vocabulary v(adtree::model::Vocabulary::Kind::Classes,
                                           {"tench", "goldfish", "great white shark", "Tiger"});
  return v;
}
// (vocabulary size, image tokens) of the micro model, the emoji model, LlamaGen 256 px and a
// degenerate one-token grid.
constexpr int64_t kShapes[][2] = {{32, 16}, {512, 256}, {16384, 256}, {2, 1}};

void settings(const nlohmann::json& j) {
  using namespace adtree::decode;
  try {
    const auto m = MethodSettings::from_json(j);
    for (const auto& s : kShapes) {
      try {
        m.validate(s[0], s[1]);
      } catch (const adtree::Error&) {
      }
    }
    (void)m.to_json().dump();
  } catch (const adtree::Error&) {
  }
  try {
    const nlohmann::json& sj = j.is_object() && j.contains("sampling") ? j.at("sampling") : j;
    const auto p = SamplingParams::from_json(sj, SamplingParams{});
    for (const auto& s : kShapes) {
      try {
        p.validate(s[0], s[1]);
      } catch (const adtree::Error&) {
      }
    }
    (void)p.to_json().dump();
  } catch (const adtree::Error&) {
  }
}

void prompt(const std::string& text) {
  (void)adtree::model::split_words(text);
  try {
    const auto ids = words().encode_words(text);
    for (int64_t id : ids) {
      if (id < 0 || id >= words().size()) __builtin_trap();  // ids index the embedding table
    }
  } catch (const adtree::Error&) {
  }
  try {
    const int64_t id = classes().class_id(text);
    if (id < 0 || id >= classes().size()) __builtin_trap();
  } catch (const adtree::Error&) {
  }
  (void)words().complete(text);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  prompt(text);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    return 0;  // not JSON: the expected answer
  }
  settings(j);  // anything but adtree::Error escaping from here is a finding
  return 0;
}
