// Prompt fidelity of a trained model: generate images for seen
// (training) prompts and check whether the nearest training picture, in pixel space and in VQ-code
// space, carries that prompt (top-1 and top-5). Chance level is 1 / (training pictures).
#pragma once
#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "io/dataset.h"
#include "model/model_dir.h"

namespace adtree::train {

struct FidelityOptions {
  int64_t prompts = 48;  // distinct training captions, drawn with `seed`
  double cfg = 3.0;
  double temperature = 1.0;
  uint64_t seed = 0;
  int64_t batch = 16;
  std::string split = "train";  // "train" (seen prompts) or "validation" (unseen: no exact hits)
};

struct FidelityResult {
  nlohmann::json metrics;
  std::vector<std::string> prompts;
  at::Tensor images;   // uint8 [prompts, H, W, 3] generated pictures
  at::Tensor nearest;  // uint8 [prompts, H, W, 3] nearest training picture in pixel space
};

FidelityResult prompt_fidelity(const model::ModelBundle& m, const io::Dataset& data,
                               const FidelityOptions& opts, std::ostream* log);

}  // namespace adtree::train
