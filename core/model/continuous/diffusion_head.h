// The continuous family's token head (issue "CSpD", part 2): MAR's DiffLoss MLP (LTH14/mar
// models/diffloss.py, SimpleMLPAdaLN), written from its description, read top to bottom:
//   h = input_proj(x_t)                                  x_t: the noisy token [B, D]
//   y = time_mlp(sinusoid_256(t)) + cond_embed(z)        t: the training step, z: the backbone's
//   for each block: h = h + gate * mlp(ln(h) * (1 + scale) + shift),  (shift, scale, gate) = ada(y)
//   out = final(ln0(h) * (1 + scale) + shift)            [B, 2D]: epsilon, then the variance
//                                                        interpolation v (learned range)
// CFG mixes the epsilon halves of a batch of [conditional; unconditional] rows (forward_cfg).
#pragma once
#include <ATen/ATen.h>

#include <vector>

#include "model/params.h"

namespace adtree::model {

struct DiffusionHeadConfig {
  int64_t token_dim = 16;  // D
  int64_t cond_dim = 256;  // the backbone's width
  int64_t width = 256;
  int64_t blocks = 3;
  int64_t freq_dim = 256;  // the sinusoidal time embedding's size
};

std::vector<ParamSpec> diffusion_head_param_specs(const DiffusionHeadConfig& c);

class DiffusionHead {
 public:
  DiffusionHead(DiffusionHeadConfig c, const TensorMap& weights);

  const DiffusionHeadConfig& config() const { return c_; }
  const TensorMap& weights() const { return w_; }  // fp32, the names of the specs
  // x [B, D], t [B] (training steps, any dtype), z [B, cond_dim] -> [B, 2D].
  at::Tensor forward(const at::Tensor& x, const at::Tensor& t, const at::Tensor& z) const;
  // Rows [cond; uncond] (2B), the same x_t in both halves (one trajectory per token, as MAR's
  // forward_with_cfg): the epsilon of both halves replaced by uncond + cfg (cond - uncond); each
  // half keeps its own variance output.
  at::Tensor forward_cfg(const at::Tensor& x, const at::Tensor& t, const at::Tensor& z,
                         double cfg) const;

  // The sinusoidal embedding of `t` [B]: [cos(t f_i), sin(t f_i)], f_i = 10000^(-i / (dim / 2)).
  static at::Tensor time_embedding(const at::Tensor& t, int64_t dim);

 private:
  at::Tensor linear(const at::Tensor& x, const std::string& name) const;

  DiffusionHeadConfig c_;
  TensorMap w_;
};

}  // namespace adtree::model
