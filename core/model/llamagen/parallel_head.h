// The parallel draft head: every depth of a draft tree in one call (issue "Draft trees that pay",
// part 2; Medusa's heads, given what a visual tree knows for free). From the root's pair, the
// target feature F_r that predicted the root token z_r and z_r itself, and for each depth
// j = 1 .. K the committed code above cell r + j, it predicts the CFG-mixed logits of cells
// r + 1 .. r + K at once, read top to bottom:
//   x_j      = W_in [e(z_r); F_r; e(above_j)] + b_in + depth_j
//   h_j      = x_j + W_2 silu(W_1 rms(x_j))
//   logits_j = output(rms(h_j) * g)
// e() is the target's token embedding (zeros where no code above is committed: the top row, or
// depths past one image row) and output() the target's output head, both frozen. No KV cache and
// no level-by-level forwards: a tree's children at depth j all share row j's distribution.
// It predicts the guided distribution directly, so it runs on the conditional stream only.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "model/cpu/packed_weight.h"
#include "model/llamagen/gpt.h"
#include "model/params.h"

namespace adtree::model {

class PackCache;

std::vector<ParamSpec> parallel_head_param_specs(const GptConfig& target, int64_t depths);

class ParallelHead {
 public:
  // Keeps a reference to `target` (embedding, output head): it must outlive this. The lean path's
  // panels come through `packs` when given (cached under "parallel.").
  ParallelHead(const Gpt& target, const TensorMap& weights, int64_t depths, bool inference = true,
               PackCache* packs = nullptr);

  int64_t depths() const { return depths_; }
  const Gpt& target() const { return target_; }
  const TensorMap& weights() const { return w_; }
  int64_t num_params() const;

  // feats [R, D] (F_r per root), tokens [R] (z_r), above [R, K] (-1: no code above) ->
  // logits [R, K, V] fp32.
  at::Tensor forward(const at::Tensor& feats, const at::Tensor& tokens,
                     const at::Tensor& above) const;

 private:
  at::Tensor input(const at::Tensor& feats, const at::Tensor& tokens,
                   const at::Tensor& above) const;
  at::Tensor linear(const at::Tensor& x, const at::Tensor& w, const PackedWeight& p) const;

  const Gpt& target_;
  TensorMap w_;
  int64_t depths_;
  bool inference_;
  PackedWeight in_packed_, w1_packed_, w2_packed_;  // lean path only
};

}  // namespace adtree::model
