// MAR's generation (issue "MAR checkpoints"; LTH14/mar models/mar.py sample_tokens), read top to
// bottom, with its randomness given so that a run repeats and a parity test can inject MAR's:
//   unknown = every token; for step in 0 .. num_iter-1:
//     z = backbone(tokens, unknown, class) (and with the null class for CFG)
//     keep masked the first floor(N cos(pi/2 (step+1)/num_iter)) entries of the order (at least
//       one, at most one fewer than are masked now); the rest of the masked ones are predicted now
//       (all that are left at the last step)
//     each predicted token: the diffusion head from x_T[i] with noise[i][k] at reverse step k (none
//       at the last, as MAR's DDPM), CFG on epsilon at 1 + (cfg - 1) (N - still masked) / N on the
//       linear schedule (cfg itself on the constant one), each std times the temperature
// So a token's draws depend only on its position: a draft and a target fed the same noise follow
// aligned trajectories (CSpD).
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <functional>

#include "model/continuous/diffusion_head.h"
#include "model/continuous/diffusion_schedule.h"
#include "model/mar/mar_backbone.h"

namespace adtree::decode {

struct MarNoise {
  at::Tensor orders;  // [B, N] long: a permutation per row; its last entries are generated first
  at::Tensor x_T;     // [B, N, D] each position's starting noise
  at::Tensor noise;   // [B, N, K, D] each position's noise per reverse step (the last one unused)
};

// Fresh randomness from `seed` (the project's generator, the same on every machine).
MarNoise draw_mar_noise(int64_t batch, int64_t tokens, int64_t steps, int64_t dim, uint64_t seed);

struct MarSampling {
  int num_iter = 64;       // MAR's --num_iter: the masking schedule's steps (N: one token a step)
  double cfg = 1.0;        // 1: no guidance (half the backbone rows)
  bool cfg_linear = true;  // MAR's "linear" CFG schedule, else "constant"
  double temperature = 1.0;
};

// One step's outcome, for a front end: the positions predicted [B, n] and their tokens [B, n, D].
struct MarStepEvent {
  int step = 0;
  at::Tensor positions, tokens;
};

// labels [B] class ids (-1: the null class). Returns the tokens [B, N, D].
at::Tensor mar_generate(const model::MarBackbone& backbone, const model::DiffusionHead& head,
                        const model::DiffusionSchedule& schedule, const at::Tensor& labels,
                        const MarSampling& s, const MarNoise& noise,
                        const std::function<void(const MarStepEvent&)>& on_step = {});

}  // namespace adtree::decode
