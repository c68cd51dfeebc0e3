// Resumable checkpoints: a run folder's parameters, optimiser and trainer state after a step.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "model/params.h"

namespace adtree::train {

using model::TensorMap;

// <out>/checkpoint.safetensors: "param.<name>", the optimiser state, "extra.<name>" (trainer
// state such as codebook usage), metadata "kind", "step", "config" (JSON). Written atomically.
struct Checkpoint {
  std::string kind;
  int64_t step = 0;
  nlohmann::json config;
  TensorMap params, optimizer, extra;

  static std::string path_in(const std::string& out_dir);
  void save(const std::string& out_dir) const;
  // Throws adtree::Error when missing, of another kind, or made with a different config.
  static Checkpoint load(const std::string& out_dir, const std::string& kind,
                         const nlohmann::json& config);
};

}  // namespace adtree::train
