// Shared-noise ("coupled") sampling, docs/design/SPEC_DECODING.md section 4. Every image cell t
// owns one Gumbel noise vector g_t over the vocabulary, drawn from a counter-based stream keyed by
// (seed, t) alone, and a token is sampled as x_t = argmax(log p_t + g_t) (Gumbel-max: exactly a
// sample of p_t). Plain AR, the draft trees and the Jacobi methods all read the same g_t, so a
// method that verifies "is the draft the target's Gumbel-max choice?" commits exactly the tokens
// AR commits, at any temperature, and a drafter that ranks by log q + g_t guesses that choice.
//
// The noise is stored as w = exp(g) = 1 / E with E ~ Exp(1): argmax p * w is argmax log p + g
// without a logarithm per token, and filtered tokens (p = 0) can never win.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <map>
#include <vector>

#include "util/rng.h"

namespace adtree::decode {

class CouplingNoise {
 public:
  CouplingNoise(uint64_t seed, int64_t vocab);
  int64_t vocab() const { return vocab_; }
  // exp(g_t) for every token of cell t (computed once per cell, kept until forget_before).
  const std::vector<double>& weights(int64_t cell);
  // The same for cells first .. first + count - 1 as one [count, V] fp64 tensor on `device` (the
  // device step's copy: fp64, so a product with p ranks tokens exactly as the host does).
  at::Tensor weights_on(int64_t first, int64_t count, at::Device device);
  // The coupled sample of p [V] (CPU fp32 contiguous) at cell t: argmax p * exp(g_t).
  int64_t choose(const float* p, int64_t cell);
  int64_t choose(const at::Tensor& p, int64_t cell);
  // Cells below `cell` are committed: their noise is not needed again.
  void forget_before(int64_t cell);

 private:
  uint64_t key_;
  int64_t vocab_;
  std::map<int64_t, std::vector<double>> cells_;
};

// argmax_i p[i] * w[i] over n tokens (ties to the lower id); -1 if every product is 0.
int64_t weighted_argmax(const float* p, const double* w, int64_t n);

// Maximal coupling of two draws (MC-SJD): a sample of q_new that equals `prev` (drawn from
// q_prev) with the largest probability any coupling allows, sum_x min(q_prev(x), q_new(x)).
// Keeps prev with probability min(1, q_new(prev) / q_prev(prev)), else draws from the residual
// norm(max(0, q_new - q_prev)). q_prev == nullptr means a point mass on prev.
int64_t maximal_coupling_draw(int64_t prev, const float* q_prev, const float* q_new, int64_t n,
                              Rng& rng);

// An inverse-CDF draw from unnormalised weights w[0..n) (> 0 somewhere) with the job's Rng.
int64_t draw_index(const std::vector<double>& w, Rng& rng);

}  // namespace adtree::decode
