// What a picture carries about how it was made: the JSON of the PNG text chunk "adtree-settings"
// (imaging/png_text.h) that the CLI and the studio both write, from a run's statistics, so
// `adtree generate --from-png` and a drop on the studio read one format (README, "Using the CLI").
#pragma once
#include <nlohmann/json.hpp>

#include <string>

#include "decode/stats/stats.h"

namespace adtree::decode {

// app, model {name, dir, hash}, prompt, seed, method_settings, sampling, verify (from the run's
// settings, where the front end has added prompt, model, model_name and model_hash), and the
// result {label, tau, tokens, elapsed_ms}. `app` names the program and version.
nlohmann::json picture_settings(const RunStats& stats, const std::string& app, double elapsed_ms);

// Settings read back from a picture are untrusted (another program's chunk, a hand edit): throws
// adtree::Error naming the field unless `j` is an object whose prompt, seed, model {dir, hash},
// method_settings and sampling, where present, have the types picture_settings writes.
void check_picture_settings(const nlohmann::json& j);

// A picture's settings read back, typed: the one reader behind `adtree generate --from-png` and a
// picture dropped on the studio.
struct PictureSettings {
  DecodeRequest request;  // method settings, sampling, seed
  std::string prompt;
  std::string model_dir, model_hash;  // empty where the picture does not say
};
// check_picture_settings, then the fields; throws adtree::Error naming what is wrong.
PictureSettings read_picture_settings(const nlohmann::json& j);

}  // namespace adtree::decode
