// Continuous-family training (`adtree train continuous`; issue "CSpD", part 2): the causal
// transformer and its diffusion head (model/continuous/continuous_gpt.h) trained together on a KL
// VAE's tokens, as MAR trains its DiffLoss: teacher forcing gives z_i for every token at once, and
// each z_i is used `diffusion_batch_mul` times with its own step and noise
// (train/diffusion_loss.h). Caption conditioning and dropout to the null caption (CFG) as the
// discrete GPT's. The draft model of CSpD is the same stage with a smaller config.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "io/dataset.h"
#include "model/conditioning.h"
#include "model/continuous/continuous_gpt.h"
#include "train/config.h"

namespace adtree::train {

nlohmann::json continuous_default_config();

// Trains on the train split with the VAE of `vae_dir` (a finished `train vae` run) and writes
// <out>/continuous.safetensors, text.json, tokens.safetensors (the VAE's tokens) and run.json.
TrainResult train_continuous(const io::Dataset& data, const std::string& vae_dir,
                             const TrainOptions& opts);

// What a finished run folder holds, for the assembler and the tests.
struct ContinuousRun {
  model::ContinuousConfig config;
  model::TensorMap weights;  // fp32
  model::Vocabulary vocab;
  nlohmann::json run;  // run.json
};
ContinuousRun load_continuous_run(const std::string& dir);
// A run still training: the weights of its latest checkpoint, the config from the checkpoint, the
// token shape from its tokens.safetensors; run["snapshot_step"] says which step. For measuring a
// long run before it ends (`assemble-continuous --snapshot`), never for shipping.
ContinuousRun load_continuous_snapshot(const std::string& dir);

}  // namespace adtree::train
