// A token from the diffusion head (issue "CSpD"): the schedule's K reverse steps from a given
// start x_T and given per-step noises, so a draft model and a target model can run from the same
// noises (CSpD's trajectory alignment), with CFG and temperature. Returns what CSpD's rule needs:
// the token, the sum of the log stds of the steps before the last, and the last step's Gaussian.
#pragma once
#include <ATen/ATen.h>

#include "model/continuous/diffusion_head.h"
#include "model/continuous/diffusion_schedule.h"

namespace adtree::model {

struct HeadTrajectory {
  at::Tensor x0;                       // [B, D] the token
  at::Tensor log_std_before_last;      // [B] sum over the steps before the last and dimensions
  at::Tensor last_mean, last_log_std;  // [B, D] the last step's Gaussian (x0 is drawn from it)
};

// z [B, cond] (and z_uncond [B, cond] with cfg != 1; undefined: no CFG), x_T [B, D],
// noise [B, K, D] (K = schedule.sample_steps(); noise[:, 0] is the first step's). The temperature
// scales every step's std (MAR's); the last step is drawn with its noise too, so x0 follows the
// last Gaussian (MAR's DDPM adds none there, which leaves CSpD a degenerate last density).
HeadTrajectory sample_head(const DiffusionHead& head, const DiffusionSchedule& schedule,
                           const at::Tensor& z, const at::Tensor& z_uncond, double cfg,
                           double temperature, const at::Tensor& x_T, const at::Tensor& noise);

}  // namespace adtree::model
