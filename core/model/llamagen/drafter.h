// EAGLE-1 draft head (SPEC_DECODING.md 2): h = fc([embed(t_{i+1}), f_i]) (Linear 2D -> D with
// bias), then ONE decoder layer of the target's kind without its input RMSNorm, then the target's
// frozen output head. The embedding table and head are the target's. Row i of the head's sequence
// pairs the target feature f_i (hidden after the final norm at the position before token t_{i+1})
// with t_{i+1}, and sits at t_{i+1}'s sequence position for the 2-D RoPE; its output predicts
// f_{i+1} and, through the head, the token after t_{i+1}.
#pragma once
#include <ATen/ATen.h>

#include <vector>

#include "model/llamagen/gpt.h"

namespace adtree::model {

std::vector<ParamSpec> drafter_param_specs(const GptConfig& target);

class Drafter {
 public:
  struct Output {
    at::Tensor hidden;  // [B, q, dim]: predicted next features
    at::Tensor logits;  // [B, q, vocab] fp32, through the target's head
  };

  // Keeps a reference to `target` (embedding, head, RoPE, dtype, device): it must outlive this.
  // `norm_eps` is the head's RMSNorm epsilon (< 0: the target's); HF-style drafters such as
  // LANTERN's use 1e-6 where LlamaGen uses 1e-5. The lean path's panels come through `packs` when
  // given (cached under "drafter.").
  Drafter(const Gpt& target, const TensorMap& weights, bool inference = true,
          double norm_eps = -1.0, PackCache* packs = nullptr);

  const TensorMap& weights() const { return w_; }
  int64_t num_params() const;

  // Rows for every image token plus `scratch` rows of tree expansion.
  KvCache new_cache(int64_t batch, int64_t scratch = 192) const;

  // feats [B, q, dim] (target features, or the head's own predictions inside a draft tree),
  // tokens [B, q], positions pos [q] (sequence positions of the tokens). Masks as Gpt::forward.
  Output forward(KvCache* cache, const at::Tensor& feats, const at::Tensor& tokens,
                 const at::Tensor& pos, const at::Tensor& block_mask = {}) const;
  // The same on fixed shapes (static_forward.h): the block's tokens, positions, rows and bias,
  // and `feats` [B, q, dim], keep their storage from call to call, as a CUDA graph needs.
  Output forward_static(const StaticBlock& block, const at::Tensor& feats, KvCache& cache) const;

 private:
  // The lean path's fc input [B, q, 2 dim] = [embed(tokens) | feats] (feats fp32 contiguous).
  at::Tensor lean_input(const at::Tensor& tokens, const at::Tensor& feats) const;

  const Gpt& target_;
  TensorMap w_;
  bool inference_;
  double norm_eps_;
  at::Tensor fc_w_, fc_b_;
  PackedWeight fc_packed_;  // lean path only
  at::Tensor fc_b32_;       // lean path only: the bias in fp32
  DecoderLayer layer_;
};

}  // namespace adtree::model
