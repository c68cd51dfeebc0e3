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

// The pieces every family's fidelity shares (train/continuous/continuous_fidelity.h too).
struct FidelityPrompts {
  std::vector<std::string> captions;
  std::vector<int64_t> emoji;             // the emoji each prompt names (any style or skin tone)
  std::vector<std::vector<int64_t>> ids;  // each caption's word ids
};
// Distinct captions of `prompt_rows` in a seeded order, their words in `vocab` (at most cond_len).
FidelityPrompts pick_prompts(const model::Vocabulary& vocab, int64_t cond_len,
                             const io::Dataset& data, const std::vector<int64_t>& prompt_rows,
                             const FidelityOptions& o);
// Squared L2 over all pixels of uint8 images [P, H, W, 3] against every training picture.
at::Tensor pixel_distances(const at::Tensor& images, const io::Dataset& data,
                           const at::Tensor& train_idx);
// Top-1 / top-5 hits (exact caption, same emoji) of the nearest pictures under `dist` [P, rows];
// `top1` (optional) receives each prompt's nearest index into train_rows.
nlohmann::json score_nearest(const at::Tensor& dist, const io::Dataset& data,
                             const std::vector<int64_t>& train_rows, const FidelityPrompts& p,
                             at::Tensor* top1);
// The chance of an emoji-level top-1 hit.
double emoji_chance(const io::Dataset& data, const std::vector<int64_t>& train_rows,
                    const std::vector<int64_t>& prompt_emoji);

}  // namespace adtree::train
