#include "decode/tree/draft_tree.h"

#include <algorithm>

namespace adtree::decode {

std::vector<int64_t> DraftTree::children(int64_t i) const {
  std::vector<int64_t> out;
  for (int64_t j = i + 1; j < size(); ++j) {
    if (nodes[size_t(j)].parent == i) out.push_back(j);
  }
  std::stable_sort(out.begin(), out.end(), [&](int64_t a, int64_t b) {
    return nodes[size_t(a)].rank < nodes[size_t(b)].rank;
  });
  return out;
}

at::Tensor DraftTree::ancestor_mask() const {
  const int64_t n = size();
  auto m = at::zeros({n, n}, at::kBool);
  auto acc = m.accessor<bool, 2>();
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t a = i; a >= 0; a = nodes[size_t(a)].parent) acc[i][a] = true;
  }
  return m;
}

std::vector<int64_t> DraftTree::depths() const {
  std::vector<int64_t> d;
  d.reserve(nodes.size());
  for (const auto& n : nodes) d.push_back(n.depth);
  return d;
}

}  // namespace adtree::decode
