#include "decode/cascade.h"

#include <map>
#include <set>
#include <utility>

namespace adtree::decode {

at::Tensor cascade_gate(const at::Tensor& p, const at::Tensor& z) {
  auto zf = z.to(at::kDouble), pf = p.to(at::kDouble);
  auto unit = zf / zf.norm(2, -1, true).clamp_min(1e-12);
  auto log_s = at::log_softmax(unit, -1);
  // 0 log 0 = 0: tokens outside the target's support add nothing.
  auto terms = at::where(pf > 0, pf * (pf.clamp_min(1e-300).log() - log_s), at::zeros_like(pf));
  return terms.sum(-1);
}

namespace {
// Node groups whose draft-head rows are compared: one per level, or per parent.
std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> groups(const DraftTree& tree,
                                                                   bool siblings_only) {
  std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> g;
  for (int64_t i = 1; i < tree.size(); ++i) {
    if (!tree.child_dist[size_t(i)].defined()) continue;
    const auto& nd = tree.nodes[size_t(i)];
    g[{nd.depth, siblings_only ? nd.parent : -1}].push_back(i);
  }
  return g;
}
}  // namespace

void CascadeRule::begin(const DraftTree& tree, const at::Tensor& logits, const at::Tensor& p) {
  tree_ = &tree;
  const int64_t n = tree.size();
  conv_.assign(size_t(n), 0.0);
  gate_.assign(size_t(n), 0.0);
  same_.assign(size_t(n), {});
  if (s_.tau_c <= 1.0 && n > 1) {
    std::vector<int64_t> parents;
    for (int64_t i = 1; i < n; ++i) parents.push_back(tree.nodes[size_t(i)].parent);
    auto z = logits.to(at::kCPU, at::kDouble);
    auto zp = z.index_select(0, at::tensor(parents, at::TensorOptions().dtype(at::kLong)));
    auto cos = at::cosine_similarity(zp, z.narrow(0, 1, n - 1), 1, 1e-12).contiguous();
    for (int64_t i = 1; i < n; ++i) conv_[size_t(i)] = cos.data_ptr<double>()[i - 1];
    auto g = cascade_gate(p.to(at::kCPU), z).contiguous();
    for (int64_t i = 0; i < n; ++i) gate_[size_t(i)] = g.data_ptr<double>()[i];
  }
  if (s_.tau_s > 1.0) return;
  for (const auto& [key, ids] : groups(tree, s_.siblings_only)) {
    if (ids.size() < 2) continue;
    std::vector<at::Tensor> rows;
    for (auto i : ids) rows.push_back(tree.child_dist[size_t(i)].to(at::kDouble));
    auto d = at::stack(rows);
    d = d / d.norm(2, -1, true).clamp_min(1e-12);
    auto cos = d.matmul(d.t()).contiguous();
    const double* c = cos.data_ptr<double>();
    const size_t m = ids.size();
    for (size_t a = 0; a < m; ++a) {
      for (size_t b = 0; b < m; ++b) {
        if (a == b || !(c[a * m + b] > s_.tau_s)) continue;
        if (tree.nodes[size_t(ids[a])].token == tree.nodes[size_t(ids[b])].token) continue;
        same_[size_t(ids[a])].push_back(ids[b]);
      }
    }
  }
}

double CascadeRule::bonus(int64_t parent, int64_t child, const std::vector<double>& p) const {
  double b = 0;
  const double c = conv_[size_t(child)];
  if (c > s_.tau_c && gate_[size_t(parent)] < s_.kappa) b += c;
  // Each token's mass counts once, and never the candidate's own token.
  std::set<int64_t> seen{tree_->nodes[size_t(child)].token};
  for (auto w : same_[size_t(child)]) {
    const int64_t t = tree_->nodes[size_t(w)].token;
    if (seen.insert(t).second) b += p[size_t(t)];
  }
  return b;
}

}  // namespace adtree::decode
