#include "decode/verify/acceptance.h"

#include <set>

#include "decode/sampling.h"
#include "util/error.h"

namespace adtree::decode {

namespace {
std::vector<double> row(const at::Tensor& p, int64_t i) {
  auto r = p[i];
  const float* d = r.data_ptr<float>();
  return std::vector<double>(d, d + r.numel());
}
bool normalise(std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  if (!(s > 0)) return false;
  for (double& x : v) x /= s;
  return true;
}
}  // namespace

AcceptResult verify_tree(const DraftTree& tree, const at::Tensor& p_all, ChildRule rule,
                         const LanternRule* lantern, int64_t max_depth, Rng& rng,
                         const CascadeRule* cascade) {
  AcceptResult res;
  auto p_cpu = p_all.to(at::kCPU, at::kFloat).contiguous();
  int64_t cur = 0;
  std::vector<int64_t> absorbed;
  while (true) {
    if (tree.nodes[size_t(cur)].depth >= max_depth) return res;  // last cell reached: no bonus
    auto p = row(p_cpu, cur);
    const auto original = p;
    std::vector<double> q;
    if (rule == ChildRule::WithoutReplacement && tree.child_dist[size_t(cur)].defined()) {
      const auto& qd = tree.child_dist[size_t(cur)];
      const float* d = qd.data_ptr<float>();
      q.assign(d, d + qd.numel());
    }
    int64_t accepted = -1;
    std::set<int64_t> seen;
    for (int64_t c : tree.children(cur)) {
      const int64_t x = tree.nodes[size_t(c)].token;
      if (!seen.insert(x).second) continue;  // duplicate child tokens are skipped
      const double px = lantern ? lantern->relaxed(p, x, absorbed) : p[size_t(x)];
      double qx = 1.0;  // deterministic children: q is a point mass
      if (!q.empty()) {
        if (!(q[size_t(x)] > 0)) continue;
        qx = q[size_t(x)];
      }
      double ratio = q.empty() ? px : px / qx;
      if (cascade) {
        // r <= (p + r B) / q  <=>  r (q - B) <= p: accept with min(1, p / (q - B)).
        const double b = cascade->bonus(cur, c, p);
        if (b > 0) ratio = b >= qx ? 1.0 : px / (qx - b);
      }
      const double u = rng.uniform();
      if (u < std::min(1.0, ratio)) {
        const double lossless = q.empty() ? p[size_t(x)] : p[size_t(x)] / qx;
        if (u >= lossless) ++res.relaxed;
        accepted = c;
        break;
      }
      // Rejected: the residual distribution for the next child (or the final sample).
      if (!q.empty()) {
        for (size_t i = 0; i < p.size(); ++i) p[i] = std::max(0.0, p[i] - q[i]);
        q[size_t(x)] = 0;
        normalise(q);
      }
      p[size_t(x)] = 0;
      if (lantern) {
        for (auto a : absorbed) p[size_t(a)] = 0;
      }
      if (!normalise(p)) p = original;  // numerically empty residual: fall back to p itself
    }
    if (accepted < 0) {
      res.has_bonus = true;
      res.bonus = draw_index(p, rng);
      return res;
    }
    res.path.push_back(accepted);
    cur = accepted;
  }
}

namespace {
// The longest accepted path below node `cur` (node ids, depth order) and the choice after it.
struct CoupledWalk {
  const DraftTree& tree;
  const at::Tensor& p;  // CPU fp32 contiguous
  CouplingNoise& noise;
  int64_t root_index, max_depth;
  std::vector<std::vector<int64_t>> kids;

  AcceptResult from(int64_t cur) {
    AcceptResult best;
    const int64_t depth = tree.nodes[size_t(cur)].depth;
    if (depth >= max_depth) return best;  // last cell reached: no bonus
    const int64_t y = noise.choose(p[cur].data_ptr<float>(), root_index + depth + 1);
    best.has_bonus = true;
    best.bonus = y;
    for (int64_t c : kids[size_t(cur)]) {
      if (tree.nodes[size_t(c)].token != y) continue;
      auto sub = from(c);
      if (!best.path.empty() && sub.path.size() + 1 <= best.path.size()) continue;
      sub.path.insert(sub.path.begin(), c);
      best = std::move(sub);
    }
    return best;
  }
};
}  // namespace

AcceptResult verify_coupled(const DraftTree& tree, const at::Tensor& p_all, CouplingNoise& noise,
                            int64_t root_index, int64_t max_depth) {
  auto p = p_all.to(at::kCPU, at::kFloat).contiguous();
  CoupledWalk walk{tree,       p,         noise,
                   root_index, max_depth, std::vector<std::vector<int64_t>>(tree.nodes.size())};
  for (int64_t i = 1; i < tree.size(); ++i)
    walk.kids[size_t(tree.nodes[size_t(i)].parent)].push_back(i);
  return walk.from(0);
}

}  // namespace adtree::decode
