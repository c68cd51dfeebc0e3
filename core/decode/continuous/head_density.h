// From a diffusion head's trajectory (model/continuous/head_sampler.h) to what CSpD's rule
// (cspd_rule.h) reads: a token as a vector of doubles, and the last reverse step's Gaussian of a
// row, its std widened by the inner temperature. The continuous family's decoder and MAR's share
// them.
#pragma once
#include <ATen/ATen.h>

#include "decode/continuous/token_density.h"
#include "model/continuous/head_sampler.h"

namespace adtree::decode {

// Row i of a [B, D] tensor.
Token token_row(const at::Tensor& t, int64_t i);

// Row i's last-step Gaussian, its std times `widen` (1: as it is).
DiagGaussian last_step_density(const model::HeadTrajectory& h, int64_t i, double widen);

}  // namespace adtree::decode
