// CSpD's accept / residual step for one drafted continuous token (arXiv 2411.11925; issue "CSpD",
// part 4; docs/design/SPEC_DECODING.md). The draft's and the target's diffusion heads run from the
// same starting noise with the same noise at every step ("trajectory alignment"), so each model's
// trajectory density, evaluated on its own trajectory, has the same Gaussian exponents at every
// step but the last: their ratio over steps t >= 2 is S = prod_t prod_d sigma_q,t,d / sigma_p,t,d
// (draft over target; the released code uses the reciprocal, which the parity test refutes), and
//   r = S * p_last(x0) / q_last(x0),   accept the draft x0 when u < r;
// otherwise a token of the residual max(0, S p_last - q_last) is drawn by acceptance-rejection
// with p_last as the proposal (no network call). With one denoising step S = 1 and this is exact
// speculative sampling of a continuous density; with more it is CSpD's approximation (r is not the
// ratio of the marginals, which a diffusion head does not give).
#pragma once
#include <vector>

#include "decode/continuous/token_density.h"

namespace adtree::decode {

// log S over the steps before the last: sum over steps and dimensions of log sigma_q - log sigma_p
// (each vector: one log-std per step and dimension, in the same order).
double aligned_log_scale(const std::vector<double>& log_std_draft,
                         const std::vector<double>& log_std_target);

struct CspdVerdict {
  bool accepted = false;   // the draft token stands
  Token token;             // the draft token, or the residual's
  int tries = 0;           // residual proposals drawn (0 when accepted)
  bool exhausted = false;  // no residual proposal was accepted in max_tries: the last one is used
  double log_ratio = 0;    // log r of the draft (cspd_verify), for the run's record
};

// One drafted token x0 through the rule. Draws its uniforms and proposals from `rng`.
CspdVerdict cspd_verify(const Token& x0, const TokenDensity& p_last, const TokenDensity& q_last,
                        double log_s, Rng& rng, int max_tries = 100);

// The released code's relaxation (its "inner temperature"): the test compares other densities,
// p_test and q_test (the last-step Gaussians widened), while a refused draft's residual is drawn
// from the models' own last steps p_last and q_last, so a replacement token lies where the target
// puts it. With p_test = p_last and q_test = q_last this is cspd_verify.
CspdVerdict cspd_verify_relaxed(const Token& x0, const TokenDensity& p_test,
                                const TokenDensity& q_test, const TokenDensity& p_last,
                                const TokenDensity& q_last, double log_s, Rng& rng,
                                int max_tries = 100);

// The residual alone (what a rejection emits): proposals y ~ p_last kept with probability
// max(0, 1 - q_last(y) / (S p_last(y))).
CspdVerdict cspd_residual(const TokenDensity& p_last, const TokenDensity& q_last, double log_s,
                          Rng& rng, int max_tries = 100);

}  // namespace adtree::decode
