// A draft tree (SPEC_DECODING.md 3): node 0 is the root (the last committed token, not yet in the
// target's cache); every other node is a draft token with its parent, depth, score and the draft
// probability that proposed it. Expanded nodes keep the draft distribution over their children,
// which the static-tree verification rule needs.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace adtree::decode {

struct DraftNode {
  int64_t token = 0;
  int64_t parent = -1;  // -1 for the root
  int64_t depth = 0;    // 0 for the root
  double score =
      0;        // cumulative score the dynamic tree ranks by (log q; ChildPicker says per rule)
  float q = 1;  // draft probability of this token under its parent's distribution
  int32_t rank = 0;  // position among its parent's children (0 = best)
  // A free candidate from the image grid (the committed code above its cell, cost-aware ADT):
  // no draft distribution proposed it, so only rules that accept any candidate may verify it.
  bool grid = false;
};

struct DraftTree {
  std::vector<DraftNode> nodes;
  std::vector<at::Tensor>
      child_dist;      // per node: q over the vocabulary [V] (CPU fp32) or undefined
  int64_t levels = 0;  // d: deepest draft level present
  int64_t width = 0;   // k used to build it (for statistics)

  int64_t size() const { return int64_t(nodes.size()); }
  // Children of node i, in rank order.
  std::vector<int64_t> children(int64_t i) const;
  // [n, n] bool: node i may attend to node j iff j is i or an ancestor of i.
  at::Tensor ancestor_mask() const;
  // Depth of every node, for positions (prefix + depth).
  std::vector<int64_t> depths() const;
};

}  // namespace adtree::decode
