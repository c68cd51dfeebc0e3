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

// What r.gpt is, before converting it (the studio's import dialog): read, recognised, nothing
// written. With r's overrides (model name, heads, grid), as the conversion would use them.
struct CheckpointSummary {
  std::string role;        // "gpt", "vq", "drafter", or "" (none this program converts)
  std::string text;        // for the user ("LlamaGen class-to-image GPT: 24 layers x 16 heads ...")
  std::string problem;     // what must be given first (the heads, the grid), or why it cannot be
  std::string model_name;  // what model.json would call it
  bool c2i = false;
};
// Throws adtree::Error for a file that cannot be read (damaged, not a checkpoint, unsafe).
CheckpointSummary describe_checkpoint(const ConvertRequest& r);

// The VQ checkpoint beside a GPT's (LlamaGen's file names: vq_ds16_c2i.pt, vq_ds16_t2i.pt), or "".
std::string companion_vq(const std::string& gpt, bool c2i);

}  // namespace adtree::model
