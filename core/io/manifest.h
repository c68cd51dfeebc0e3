// model.json, the manifest of a model directory (ARCHITECTURE.md "Model directory"). This layer
// checks the file's structure; the model layer interprets the gpt / vq / drafter sections.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace adtree::io {

struct Manifest {
  static constexpr int kFormatVersion = 1;
  std::string name;
  std::string kind;  // "c2i" | "t2i-words" | "t2i-embeddings"
  int64_t grid_h = 16, grid_w = 16;
  int64_t codebook_size = 0;
  nlohmann::json gpt, vq, drafter;  // drafter is null when the model has none
  // The parallel draft head ({"kind": "parallel", "depths": K}); null when the model has none.
  nlohmann::json parallel_head;
  nlohmann::json sampling;    // default sampling settings
  nlohmann::json license;     // licence of weights and training data
  nlohmann::json provenance;  // how the weights were made (or converted)
  std::string description;
  // t2i-embeddings models: the T5 directory that encodes typed prompts (relative to the model
  // directory, or absolute); "" when the user names one (--t5, Model > Text Encoder).
  std::string text_encoder;

  // Reads <dir>/model.json; throws adtree::Error naming the file and every structural problem.
  static Manifest load(const std::string& dir);
  // The same checks on model.json text already read; `path` names the file in messages.
  static Manifest parse(const std::string& text, const std::string& path);
  void save(const std::string& dir) const;
  nlohmann::json to_json() const;
};

}  // namespace adtree::io
