// Training the draft head for what is verified (SPEC_DECODING.md 2, "Training for the sampled
// distribution"). Two parts the drafter trainer combines:
// - Training-time test (EAGLE-3, HASS): in a tree the head drafts level 2 and deeper from its own
//   predicted features, not the target's. `unrolled_forward` runs the head `passes` times over a
//   picture: pass 0 on the target's features, pass p on the features pass p - 1 predicted one row
//   earlier, each row attending to what it would see in a tree (the committed prefix with true
//   features, then its own chain of predicted ancestors), in one masked forward per pass.
// - The verified distribution: at inference the head's cond and null-caption logits are CFG-mixed
//   and scaled by the temperature before the children are drawn, so `mixed_kl` compares exactly
//   that to the target's mixed distribution.
#pragma once
#include <ATen/ATen.h>

#include <vector>

#include "model/llamagen/drafter.h"

namespace adtree::train {

// [passes * n, passes * n] bool: row (p, j) may attend to (0, i) for i <= j - p and to
// (p', j - p + p') for 1 <= p' <= p (its predicted ancestors and itself); pass 0 is causal.
at::Tensor unroll_mask(int64_t n, int64_t passes);

struct Unrolled {
  std::vector<at::Tensor> hidden, logits;  // per pass [B, n, dim] / [B, n, V]; rows j < p unused
};

// feats [B, n, dim] (the target's features), tokens [B, n], pos [n].
Unrolled unrolled_forward(const model::Drafter& head, const at::Tensor& feats,
                          const at::Tensor& tokens, const at::Tensor& pos, int64_t passes);

// KL(p || q) per row [B, n] between the target's and the head's CFG-mixed distributions at
// temperature `t`: logits [2B, n, V] with the cond stream first and the null-caption stream second.
at::Tensor mixed_kl(const at::Tensor& target_logits, const at::Tensor& head_logits, double cfg,
                    double t);

}  // namespace adtree::train
