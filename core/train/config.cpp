#include "train/config.h"

#include <fstream>

#include "model/model_dir.h"
#include "train/mixed_precision.h"
#include "util/error.h"

namespace adtree::train {

using json = nlohmann::json;

json merge_config(const json& defaults, const json& overrides, const std::string& what) {
  if (overrides.is_null()) return defaults;
  if (!overrides.is_object()) throw Error(what + ": the configuration must be a JSON object");
  json out = defaults;
  for (const auto& [key, value] : overrides.items()) {
    if (!defaults.contains(key)) {
      std::string known;
      for (const auto& [k, v] : defaults.items()) known += (known.empty() ? "" : ", ") + k;
      throw Error(what + ": unknown configuration key '" + key + "' (known: " + known + ")");
    }
    const auto& d = defaults.at(key);
    const bool same = (d.is_number() && value.is_number()) ||
                      (d.is_string() && value.is_string()) ||
                      (d.is_boolean() && value.is_boolean()) || (d.is_array() && value.is_array());
    if (!same) {
      throw Error(what + ": configuration key '" + key + "' must be a " + d.type_name() +
                  " (like " + d.dump() + "), got " + value.dump());
    }
    if (d.is_number_integer() && !value.is_number_integer()) {
      throw Error(what + ": configuration key '" + key + "' must be an integer, got " +
                  value.dump());
    }
    out[key] = value;
  }
  return out;
}

json resolve_config(const json& defaults, const TrainOptions& opts, const std::string& what) {
  auto cfg = merge_config(defaults, opts.config, what);
  if (opts.steps > 0) cfg["steps"] = opts.steps;
  if (opts.batch > 0) cfg["batch"] = opts.batch;
  if (opts.lr > 0) cfg["lr"] = opts.lr;
  cfg["seed"] = opts.seed;
  return cfg;
}

json parse_config_arg(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\n");
  try {
    if (first != std::string::npos && text[first] == '{') return json::parse(text);
    std::ifstream in(text);
    if (!in) throw Error("--config: cannot open '" + text + "' (give a JSON file or inline {...})");
    return json::parse(in);
  } catch (const json::exception& e) {
    throw Error("--config: invalid JSON (" + std::string(e.what()) + ")");
  }
}

void require(bool ok, const std::string& what, const std::string& message) {
  if (!ok) throw Error(what + ": " + message);
}

at::Device train_device(const TrainOptions& opts) {
  check_matmul_choice(opts.matmul);
  const auto device = model::parse_device(opts.device);
  if (device.is_cuda()) {
    // "high" lets cuBLAS use TF32 tensor cores for fp32 products; "highest" keeps full fp32.
    at::globalContext().setFloat32MatmulPrecision(opts.matmul == "tf32" ? "high" : "highest");
  }
  return device;
}

}  // namespace adtree::train
