// The diffusion head's training loss (issue "CSpD", part 2), improved DDPM's hybrid as MAR trains
// its DiffLoss (LTH14/mar diffusion/gaussian_diffusion.py, learn_sigma with LossType.MSE):
//   t ~ U{0..T-1}, noise ~ N(0, I), x_t = sqrt(abar_t) x0 + sqrt(1 - abar_t) noise
//   L = mean (eps_pred - noise)^2  +  L_vb
// L_vb trains the variance output alone (the mean's epsilon is detached in it): the KL in bits per
// dimension between the true posterior q(x_{t-1} | x_t, x0) and the head's Gaussian, and at t = 0
// the Gaussian negative log-likelihood of x0 (latents are continuous: no discretised likelihood).
#pragma once
#include <ATen/ATen.h>

#include "model/continuous/diffusion_head.h"

namespace adtree::train {

struct DiffusionLoss {
  at::Tensor total;  // the scalar to minimise
  double mse = 0, vb = 0;
};

// x0 [M, D] tokens, z [M, cond] their conditions; t [M] training steps and noise [M, D] given (the
// caller draws them from the step's generator). T is the schedule's training steps.
DiffusionLoss diffusion_loss(const model::DiffusionHead& head, int T, const at::Tensor& x0,
                             const at::Tensor& z, const at::Tensor& t, const at::Tensor& noise);

}  // namespace adtree::train
