// Prompt fidelity of a continuous-family model (issue "CSpD", aims): the VQ model's check
// (train/fidelity.h) on pictures made by a method of this family (AR or CSpD, at one seed per
// prompt): does the nearest training picture, in pixel space and in the VAE's token space, carry
// the prompt (top-1 / top-5, exact caption or the same emoji). With both methods on the same
// prompts and seed it also measures CSpD's distance from AR: the fidelity difference and pixel
// statistics.
#pragma once
#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <iosfwd>
#include <string>
#include <vector>

#include "decode/settings/method.h"
#include "io/dataset.h"
#include "model/continuous/continuous_dir.h"
#include "train/fidelity.h"

namespace adtree::train {

struct ContinuousFidelity {
  nlohmann::json metrics;
  std::vector<std::string> prompts;
  at::Tensor images;   // uint8 [P, H, W, 3]
  at::Tensor nearest;  // uint8 [P, H, W, 3]: each picture's nearest training picture in pixels
};

// `train_tokens` [rows of the dataset, N, D]: the VAE's tokens of every dataset row (a `train
// continuous` run folder's tokens.safetensors); undefined: pixel space only. `request` sets the
// method and its settings (its seed is opts.seed + the prompt's index).
ContinuousFidelity continuous_fidelity(const model::ContinuousBundle& m, const io::Dataset& data,
                                       const FidelityOptions& opts,
                                       const decode::DecodeRequest& request,
                                       const at::Tensor& train_tokens, std::ostream* log);

// CSpD's distance from AR on the same prompts and seeds: mean absolute pixel difference (0-255),
// the share of pictures identical, and the L1 distance of the two sets' colour histograms (16
// bins a channel, normalised).
nlohmann::json picture_distance(const at::Tensor& a, const at::Tensor& b);

// picture_distance of a method's pictures from AR's, with the difference of their emoji top-1
// in pixels (the method's minus AR's).
nlohmann::json distance_from_ar(const ContinuousFidelity& ar, const ContinuousFidelity& method);

// The request drawing the same prompts on other seeds, for the scale of that distance: once a
// refusal changes CSpD's noise stream its picture is an independent draw, so AR against AR on
// other seeds shows what sampling alone gives.
decode::DecodeRequest other_seeds(decode::DecodeRequest request);

}  // namespace adtree::train
