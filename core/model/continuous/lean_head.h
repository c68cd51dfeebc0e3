// The diffusion head's sampling loop on the lean CPU path (issue "CSpD", part 5): the same
// trajectory as model/continuous/head_sampler.h, without libtorch's per-operation cost, which at
// batch 1 is most of a reverse step (a 256-wide head: about 60 operations of a few microseconds
// each against 1 M multiply-adds). What changes is where the work is done, not what is computed:
//   - the time MLP depends on the step alone: computed once per schedule, a row per step;
//   - cond_embed(z) depends on the token alone: once per token, not per step;
//   - every product runs packed (model/cpu/packed_gemm.h), so the rows of a batch (CFG's
//     [cond; uncond], CSpD's drafted positions) share one read of the weights.
// tests/model/test_lean_head.cpp pins it to sample_head.
#pragma once
#include <ATen/ATen.h>

#include <vector>

#include "model/continuous/diffusion_head.h"
#include "model/continuous/diffusion_schedule.h"
#include "model/continuous/head_sampler.h"
#include "model/cpu/packed_weight.h"

namespace adtree::model {

class LeanHead {
 public:
  // `head` must hold fp32 CPU weights; the schedule fixes the steps (a table row per step).
  // `bf16`: the products' weights in bf16 panels (packed_bf16.h: AMX tiles where the CPU has
  // them), the activations rounded to bf16 as they enter a product; the rest stays fp32.
  LeanHead(const DiffusionHead& head, const DiffusionSchedule& schedule, bool bf16 = false);

  // As sample_head: z [B, cond] (z_uncond [B, cond] with cfg != 1, else undefined), x_T [B, D],
  // noise [B, K, D].
  HeadTrajectory sample(const at::Tensor& z, const at::Tensor& z_uncond, double cfg,
                        double temperature, const at::Tensor& x_T, const at::Tensor& noise) const;

 private:
  struct Block {
    PackedWeight ada, mlp0, mlp2;
    at::Tensor ada_b, mlp0_b, mlp2_b, ln_w, ln_b;
  };
  // One forward of the head at sampling index k on rows h0 = x [R, D], c = cond_embed(z) [R, w];
  // out [R, 2D].
  void forward(int k, const float* x, const float* c, int64_t R, float* out) const;

  DiffusionHeadConfig cfg_;
  DiffusionSchedule schedule_;  // a copy: the sampler may outlive the caller's
  at::Tensor time_table_;       // [K, w]: time_embed.2(silu(time_embed.0(sinusoid(t_k))))
  PackedWeight input_proj_, cond_embed_, final_ada_, final_linear_;
  at::Tensor input_proj_b_, cond_embed_b_, final_ada_b_, final_linear_b_;
  std::vector<Block> blocks_;
};

}  // namespace adtree::model
