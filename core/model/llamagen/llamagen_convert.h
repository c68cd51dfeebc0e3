// Released LlamaGen checkpoints -> a model directory (issue "Real checkpoints without Python"):
// what `adtree convert` and the studio's File > Import do, the same directory as
// tools/convert_llamagen.py writes (tensors, configuration, sampling defaults, provenance with
// each source file's SHA-256). Everything is written into a sibling temporary directory first and
// moved into place at the end, so a failure or a cancel leaves nothing half-written and an
// existing output untouched.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace adtree::model {

struct ConvertRequest {
  std::string gpt, vq,
      drafter;        // checkpoint files (.pt, .pth, .bin, .safetensors); vq, drafter optional
  std::string out;    // the model directory to create
  std::string model;  // LlamaGen model name (c2i_L_256): heads and image size
  int64_t n_head = 0, image_size = 0, grid = 0;  // > 0 override the name
  std::string classes;             // c2i class names (JSON list, {"classes": [...]}, or lines)
  std::string dtype;               // "" (as stored), "fp32", "bf16", "fp16"
  double drafter_norm_eps = 1e-5;  // a drafter with the app's names (LANTERN's: 1e-6)
  std::string name;                // model.json name (default: --model, else the out folder's)
  bool force = false;              // replace a non-empty out
};

// Where a conversion is: a stage ("reading the GPT", ...) and the fraction done, 0..1.
using ConvertProgress = std::function<void(const std::string& stage, double fraction)>;

struct ConvertResult {
  std::vector<std::string> summary;   // lines for the user, as the Python converter prints
  std::vector<std::string> warnings;  // things to look at (class names, the drafter's embedding)
};

// Throws adtree::Error for bad input, and adtree::Cancelled (util/error.h) when `cancel` turns
// true; either way nothing is left behind.
ConvertResult convert_llamagen(const ConvertRequest& r, const ConvertProgress& progress = {},
                               const std::atomic<bool>* cancel = nullptr);

}  // namespace adtree::model
