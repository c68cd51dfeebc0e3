// The whole picture as a user waits for it (docs/PERFORMANCE.md "The whole picture"): the model
// load, then each picture made the CLI's way (conditioning, tokens, then the final VQ decode on
// the same thread) and the studio's way (through the Engine, with live previews on a second
// thread). Tokens are what `adtree bench` measures; this adds what the user also waits for.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "decode/settings/method.h"
#include "model/model_dir.h"

namespace adtree::engine {

struct LoadTiming {
  double ms = 0;
  double rss_mib = 0;        // resident after the load
  double peak_rss_mib = 0;   // the process's peak so far (the load's, in a fresh process)
  double weights_mib = 0;    // the model's .safetensors files on disk
  int64_t minor_faults = 0;  // page faults during the load (getrusage)
  int64_t major_faults = 0;
  nlohmann::json to_json() const;
};

struct PictureTiming {
  std::string path;  // "cli" or "engine"
  std::string prompt;
  uint64_t seed = 0;
  double first_step_ms = 0;    // the prefill: the condition and the first image token
  double tokens_ms = 0;        // the decoding loop, all steps
  double final_decode_ms = 0;  // the VQ decode of the whole grid
  double picture_ms = 0;       // conditioning + tokens + final decode
  int64_t previews = 0;        // partial decodes shown while the tokens ran (engine)
  double preview_ms = 0;       // their decode time in all
  double preview_max_ms = 0;   // the longest one
  nlohmann::json to_json() const;
};

// Loads `dir` (with the VQ) and reports time, resident memory and page faults.
LoadTiming time_load(const std::string& dir, const model::LoadOptions& opts,
                     model::ModelBundle* out);

// One picture the CLI's way.
// One picture the CLI's way; `where` is how `m` was loaded (its device and dtype).
PictureTiming time_cli_picture(const model::ModelBundle& m, const model::LoadOptions& where,
                               const std::string& prompt, const decode::DecodeRequest& request);

struct EnginePictures {
  double load_ms = 0;  // the engine's own model load (ModelLoaded::load_ms)
  std::vector<PictureTiming> pictures;
};

// The same pictures through an Engine on `dir`, previews every `preview_interval_ms` (0 = none).
// Throws adtree::Error when the load or a job fails or a job does not end within `timeout_s`.
EnginePictures time_engine_pictures(
    const std::string& dir, const model::LoadOptions& opts,
    const std::vector<std::pair<std::string, decode::DecodeRequest>>& jobs,
    double preview_interval_ms, double timeout_s = 600);

}  // namespace adtree::engine
