#include "decode/verify/cascade.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

namespace adtree::decode {

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

namespace {
double dot(const float* a, const float* b, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += double(a[i]) * double(b[i]);
  return s;
}
double cosine(const float* a, const float* b, int64_t n) {
  const double d = std::sqrt(dot(a, a, n) * dot(b, b, n));
  return d > 1e-24 ? dot(a, b, n) / d : 0.0;
}
// The convergence gate of one row: KL(p || softmax(z / |z|_2)), close to log V - H(p) since the
// normalised logits' softmax is nearly uniform.
double gate_row(const float* p, const float* z, int64_t n) {
  const double norm = std::max(std::sqrt(dot(z, z, n)), 1e-12);
  double mx = -1e300, lse = 0, kl = 0;
  for (int64_t i = 0; i < n; ++i) mx = std::max(mx, double(z[i]) / norm);
  for (int64_t i = 0; i < n; ++i) lse += std::exp(double(z[i]) / norm - mx);
  lse = mx + std::log(lse);
  for (int64_t i = 0; i < n; ++i) {
    if (p[i] > 0) kl += double(p[i]) * (std::log(double(p[i])) - (double(z[i]) / norm - lse));
  }
  return kl;
}
}  // namespace

// Plain loops over the rows: a step has a few dozen rows, where per-op tensor overhead would cost
// more than the arithmetic.
void CascadeRule::begin(const DraftTree& tree, const at::Tensor& logits, const at::Tensor& p) {
  tree_ = &tree;
  const int64_t n = tree.size();
  conv_.assign(size_t(n), 0.0);
  gate_.assign(size_t(n), 0.0);
  same_.assign(size_t(n), {});
  if (s_.tau_c <= 1.0 && n > 1) {
    auto z = logits.to(at::kCPU, at::kFloat).contiguous();
    auto pc = p.to(at::kCPU, at::kFloat).contiguous();
    const int64_t V = z.size(1);
    const float* zd = z.data_ptr<float>();
    const float* pd = pc.data_ptr<float>();
    for (int64_t i = 1; i < n; ++i) {
      conv_[size_t(i)] = cosine(zd + tree.nodes[size_t(i)].parent * V, zd + i * V, V);
    }
    for (int64_t i = 0; i < n; ++i) gate_[size_t(i)] = gate_row(pd + i * V, zd + i * V, V);
  }
  if (s_.tau_s > 1.0) return;
  for (const auto& [key, ids] : groups(tree, s_.siblings_only)) {
    if (ids.size() < 2) continue;
    std::vector<at::Tensor> rows;
    for (auto i : ids)
      rows.push_back(tree.child_dist[size_t(i)].to(at::kCPU, at::kFloat).contiguous());
    const int64_t V = rows[0].numel();
    for (size_t a = 0; a < ids.size(); ++a) {
      for (size_t b = a + 1; b < ids.size(); ++b) {
        const auto &na = tree.nodes[size_t(ids[a])], &nb = tree.nodes[size_t(ids[b])];
        if (na.token == nb.token) continue;
        if (!(cosine(rows[a].data_ptr<float>(), rows[b].data_ptr<float>(), V) > s_.tau_s)) continue;
        same_[size_t(ids[a])].push_back(ids[b]);
        same_[size_t(ids[b])].push_back(ids[a]);
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
