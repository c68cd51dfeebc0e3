// The verifiers of the one decoding loop (SPEC_DECODING.md 4): given the draft tree and the
// target's rows p [nodes, V] (row i = the distribution after node i), which nodes are accepted and
// which token the target adds after them.
//   coupled    shared Gumbel noise: follow the child equal to the target's Gumbel-max choice
//   rejection  deterministic children (accept x with p(x)) or children drawn from q (recursive
//              rejection, residual norm(max(0, p - q))); optionally LANTERN-relaxed
//   cascade    the rejection rule under CASCADE's context-aware relaxation (cascade.h)
//   jacobi     the Jacobi window's own rule, chain by chain (JacobiState::accept)
#pragma once
#include <ATen/ATen.h>

#include <memory>

#include "decode/jacobi/jacobi.h"
#include "decode/verify/acceptance.h"
#include "decode/verify/cascade.h"
#include "decode/verify/coupling.h"
#include "decode/verify/lantern.h"
#include "util/rng.h"

namespace adtree::decode {

class Verifier {
 public:
  virtual ~Verifier() = default;
  // `logits`: the target's CFG-mixed rows before temperature and filters (CPU fp32), which only
  // CASCADE reads; `root_index`: image index of the tree's root; `max_depth`: the deepest node
  // depth that is still inside the image (no bonus after it).
  virtual AcceptResult verify(const DraftTree& tree, const at::Tensor& p, const at::Tensor& logits,
                              int64_t root_index, int64_t max_depth) = 0;
};

std::unique_ptr<Verifier> make_coupled_verifier(CouplingNoise& noise);
std::unique_ptr<Verifier> make_rejection_verifier(ChildRule rule, const LanternRule* lantern,
                                                  Rng& rng);
std::unique_ptr<Verifier> make_cascade_verifier(ChildRule rule, const CascadeSettings& settings,
                                                Rng& rng);
std::unique_ptr<Verifier> make_jacobi_verifier(JacobiState& state, const LanternRule* lantern,
                                               Rng& rng);

}  // namespace adtree::decode
