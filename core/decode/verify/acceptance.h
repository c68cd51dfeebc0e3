// Verification rules (SPEC_DECODING.md 4): walk the tree from the root, accepting children by the
// rule of the tree's kind, and end with a bonus / residual token from the target. Lossless unless
// a LANTERN or CASCADE rule is given.
#pragma once
#include <ATen/ATen.h>

#include <vector>

#include "decode/tree/draft_tree.h"
#include "decode/verify/cascade.h"
#include "decode/verify/coupling.h"
#include "decode/verify/lantern.h"
#include "util/rng.h"

namespace adtree::decode {

enum class ChildRule {
  Deterministic,       // dynamic / ADT trees: q is a point mass on each child
  WithoutReplacement,  // static trees under sampling: children drawn from q without replacement
};

struct AcceptResult {
  std::vector<int64_t> path;  // accepted node ids, root excluded, in depth order
  bool has_bonus = false;     // false only when the path already reached the last image cell
  int64_t bonus = -1;         // token sampled from the target after the path
  int64_t relaxed = 0;        // accepted nodes that the lossless test would have rejected
};

// p: target probabilities [n, V] (CPU fp32), row i = distribution after node i. With `greedy`,
// rows are one-hot argmaxes and the rule reduces to "accept the child equal to the argmax".
// `max_depth`: the deepest node depth that is still inside the image (no bonus after it).
// `lantern` or `cascade` (prepared for this tree) relax the test; lossless when both are null.
AcceptResult verify_tree(const DraftTree& tree, const at::Tensor& p, ChildRule rule,
                         const LanternRule* lantern, int64_t max_depth, Rng& rng,
                         const CascadeRule* cascade = nullptr);

// Shared-noise verification: the target's token after node i is its Gumbel-max choice
// argmax p_i * exp(g) with the noise of the cell node i predicts (root_index + depth + 1). Follow
// a child equal to it (several equal children, as parallel Jacobi chains have: the one whose
// subtree accepts longest), else that choice is the bonus. Every committed token is the one
// coupled AR commits, whatever the tree holds.
AcceptResult verify_coupled(const DraftTree& tree, const at::Tensor& p, CouplingNoise& noise,
                            int64_t root_index, int64_t max_depth);

}  // namespace adtree::decode
