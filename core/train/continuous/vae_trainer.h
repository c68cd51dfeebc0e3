// KL VAE training (`adtree train vae`; issue "CSpD", part 2): the continuous family's tokenizer,
// the VQ trainer's conv trunks with a Gaussian posterior per cell instead of a codebook. Loss: L1 +
// L2 reconstruction of a posterior sample plus kl_weight times the KL to N(0, I) (means over
// elements). No perceptual or GAN loss, as for the VQ. When training ends, latent_scale is set to
// 1 / std of the training pictures' posterior means, so the family's tokens have unit variance (the
// diffusion head's schedule assumes it).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/dataset.h"
#include "model/continuous/kl_vae.h"
#include "train/config.h"

namespace adtree::train {

// Every key `--config` may set for a VAE run, with its default.
nlohmann::json vae_default_config();

// Trains on the train split and writes <out>/vae.safetensors (with encoder) and <out>/run.json.
TrainResult train_vae(const io::Dataset& data, const TrainOptions& opts);

// Validation PSNR (as evaluate_vq) of decoding the posterior means, and the KL per element.
nlohmann::json evaluate_vae(const model::KlVae& vae, const io::Dataset& data,
                            const std::vector<int64_t>& rows, int64_t batch = 16);
// Tokens [rows, h*w, D] (posterior means times latent_scale) of dataset rows, without autograd.
at::Tensor vae_tokens(const model::KlVae& vae, const io::Dataset& data,
                      const std::vector<int64_t>& rows, int64_t batch = 16);

// The VAE of a finished run folder (<dir>/vae.safetensors + run.json) or a continuous model's
// directory (model.json's "vae").
model::KlVae load_vae(const std::string& dir);

}  // namespace adtree::train
