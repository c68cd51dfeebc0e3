// LANTERN relaxed acceptance (SPEC_DECODING.md 4; lossy, switchable on any tree): a draft token x
// may take the target mass of its nearest latent neighbours, since codes close in the VQ codebook
// decode to similar pixels. delta mode bounds the total-variation cost by delta; lambda mode
// (LANTERN++) bounds the relaxed probability by lambda * p(x).
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "decode/settings/method.h"

namespace adtree::decode {

// For every code, its k nearest other codes by L2 distance of the (normalised) codebook vectors,
// nearest first: [V, k] int64. Computed in chunks, so a 16384-code book needs no V x V matrix.
at::Tensor latent_neighbours(const at::Tensor& codebook, int64_t k);

class LanternRule {
 public:
  LanternRule(at::Tensor neighbours, LanternSettings settings);
  const LanternSettings& settings() const { return s_; }

  // p~(x) = p(x) + c_{m*} for the current target distribution p; `absorbed` receives the m*
  // neighbours whose mass x took (removed from p with x when x is rejected).
  double relaxed(const std::vector<double>& p, int64_t x, std::vector<int64_t>& absorbed) const;

 private:
  at::Tensor nb_;  // [V, k] CPU int64
  LanternSettings s_;
};

}  // namespace adtree::decode
