// CASCADE context-aware relaxed acceptance (SPEC_DECODING.md section 4; lossy, draft trees only):
// redundancy inside the tree itself stands in for LANTERN's codebook neighbours. Along depth, a
// candidate whose target row barely differs from its parent's ("convergence") earns its cosine as
// a bonus while the target is uncertain at the parent; across breadth, nodes of the same level
// whose draft-head rows agree ("semantic interchangeability") lend it their tokens' target mass.
// The verifier then accepts candidate x with probability min(1, p(x) / (q(x) - B)).
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "decode/settings/method.h"
#include "decode/tree/draft_tree.h"

namespace adtree::decode {

class CascadeRule {
 public:
  explicit CascadeRule(CascadeSettings settings) : s_(settings) {}
  const CascadeSettings& settings() const { return s_; }

  // Prepares one step: `logits` [n, V] are the target's CFG-mixed rows per node before
  // temperature and filters, `p` [n, V] its distributions (both CPU fp32). The draft-head rows
  // are the tree's child_dist; a node without one (a leaf) has no interchangeable nodes.
  void begin(const DraftTree& tree, const at::Tensor& logits, const at::Tensor& p);

  // B for candidate `child` of node `parent`, with `p` the parent's current (residual) target
  // distribution.
  double bonus(int64_t parent, int64_t child, const std::vector<double>& p) const;

  // The parts of bonus(), for tests and the inspector.
  double convergence(int64_t node) const { return conv_[size_t(node)]; }  // cos(z_parent, z_v)
  // The gate at node u: KL(p_u || softmax(z_u / |z_u|)), computed while tau_c <= 1.
  double gate(int64_t node) const { return gate_[size_t(node)]; }
  const std::vector<int64_t>& interchangeable(int64_t node) const { return same_[size_t(node)]; }

 private:
  CascadeSettings s_;
  const DraftTree* tree_ = nullptr;
  std::vector<double> conv_, gate_;
  std::vector<std::vector<int64_t>> same_;  // per node: nodes with a distinct token, cos > tau_s
};

}  // namespace adtree::decode
