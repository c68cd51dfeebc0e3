// A continuous-family model directory (issue "CSpD", parts 1-2), written by `adtree train
// assemble-continuous`:
//   model.json         "family": "continuous"; the VAE's, target's and draft's configs; sampling
//                      and CSpD defaults; card fields and provenance
//   vae.safetensors    the KL VAE's decoder (post_quant_conv, decoder.*)
//   target.safetensors the transformer + diffusion head that makes the picture
//   draft.safetensors  CSpD's draft model (optional: without it only AR runs)
//   text.json          the caption words (the target's and the draft's, which must agree)
#pragma once
#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "model/conditioning.h"
#include "model/continuous/continuous_gpt.h"
#include "model/continuous/kl_vae.h"

namespace adtree::model {

struct ContinuousBundle {
  std::string dir;
  nlohmann::json manifest;  // model.json
  std::unique_ptr<ContinuousGpt> target, draft;
  std::unique_ptr<KlVae> vae;
  Vocabulary vocab;
  // model.json "token_colours": (D + 1) x 3 numbers (model/continuous/token_colours.h); empty when
  // the model has none.
  std::vector<float> token_colours;

  bool has_draft() const { return draft != nullptr; }
  // model.json "sampling": cfg, temperature, diffusion_steps, head_variance ("learned" or
  // "fixed"); "cspd": gamma, prefill_ratio, inner_temperature.
  double default_cfg() const;
  double default_temperature() const;
  int default_diffusion_steps() const;
  bool default_fixed_variance() const;
  int default_gamma() const;
  double default_prefill_ratio() const;
  double default_inner_temperature() const;
  // Pixels of a decoded picture: [n, D] tokens (a raster prefix) -> uint8 [H, W, 3].
  at::Tensor picture(const at::Tensor& tokens) const;
};

// Whether `dir` holds a continuous-family model (model.json "family": "continuous").
bool is_continuous_dir(const std::string& dir);

// Loads and checks everything (configs against each other, every tensor's name, shape and
// finiteness); an adtree::Error names the file and the problem.
ContinuousBundle load_continuous_dir(const std::string& dir, bool load_draft = true);

}  // namespace adtree::model
