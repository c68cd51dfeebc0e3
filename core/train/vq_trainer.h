// VQ tokenizer training (`adtree train vq`): the LlamaGen VQ architecture at a small config,
// L1 + L2 reconstruction, codebook and commitment losses (beta 0.25) with the straight-through
// estimator on L2-normalised codes, and dead-code restarts. No perceptual or GAN loss: they need a
// pretrained network and far more compute than a CPU run has (the model card says so).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/dataset.h"
#include "model/llamagen/vq.h"
#include "train/config.h"

namespace adtree::train {

// Every key `--config` may set for a VQ run, with its default.
nlohmann::json vq_default_config();
// The model part of a resolved config.
model::VqConfig vq_model_config(const nlohmann::json& cfg);

// Trains on the train split and writes <out>/vq.safetensors (with encoder) and <out>/run.json.
TrainResult train_vq(const io::Dataset& data, const TrainOptions& opts);

// Evaluation helpers batch by 16: small batches keep activations below glibc's mmap threshold
// (larger ones were page-fault bound on the CPU) at no cost in throughput.
//
// Validation PSNR (mean over images of 10 log10(255^2 / MSE) on the 8-bit pictures a user sees),
// code usage and usage perplexity of `rows`.
nlohmann::json evaluate_vq(const model::VqModel& vq, const io::Dataset& data,
                           const std::vector<int64_t>& rows, int64_t batch = 16);
// VQ code indices [rows, h*w] (int64) of dataset rows, without autograd.
at::Tensor encode_rows(const model::VqModel& vq, const io::Dataset& data,
                       const std::vector<int64_t>& rows, int64_t batch = 16);
// Original and reconstructed pictures side by side, uint8 [2n, H, W, 3] (for a preview sheet).
at::Tensor reconstruction_pairs(const model::VqModel& vq, const io::Dataset& data,
                                const std::vector<int64_t>& rows);

// The VQ of a finished run folder (<dir>/vq.safetensors + run.json) or of a model directory.
model::VqModel load_vq(const std::string& dir);

}  // namespace adtree::train
