#include "decode/device/device_verify.h"

#include <atomic>
#include <cmath>

#include "util/error.h"

namespace adtree::decode {

namespace {

std::atomic<int64_t> g_reads{0};

// The target's choice after every node: the argmax of p (greedy: p is one-hot there), or the
// argmax of p * exp(g) with the noise of the cell the node's row predicts, in fp64 as
// CouplingNoise::choose ranks (argmax takes the first maximum, as the host does).
at::Tensor choices(const DeviceTree& t, const at::Tensor& p, bool greedy) {
  if (greedy) return p.argmax(-1);
  return (p.to(at::kDouble) * t.noise.index_select(0, t.depths)).argmax(-1);
}

// Deepest node whose whole path matches the target's choices (the root always does); siblings
// hold distinct tokens, so at most one node per depth is accepted.
at::Tensor deepest_accepted(const DeviceTree& t, const at::Tensor& choice) {
  const auto valid = at::isinf(t.scores).logical_not();
  auto match = t.tokens.eq(choice.index_select(0, t.parents)).logical_and(valid);
  match.narrow(0, 0, 1).fill_(true);
  const auto rejected_on_path = t.ancestors.logical_and(match.logical_not().unsqueeze(0)).any(1);
  return (rejected_on_path.logical_not().to(at::kLong) * (t.depths + 1)).argmax().reshape({1});
}

// The host's copy of the step: [deepest, choice after it, then per node token, parent, depth,
// rank, score, q, target top-1, on-path flag].
at::Tensor read_step(const DeviceTree& t, const Processed& target, const at::Tensor& choice) {
  const auto deepest = deepest_accepted(t, choice);
  const auto d = [](const at::Tensor& x) { return x.reshape(-1).to(at::kDouble); };
  const auto packed = at::cat({d(deepest), d(choice.index_select(0, deepest)), d(t.tokens),
                               d(t.parents), d(t.depths), d(t.ranks), d(t.scores), d(t.q),
                               d(target.top1), d(t.ancestors.index_select(0, deepest))});
  ++g_reads;
  return packed.to(at::kCPU).contiguous();
}

}  // namespace

DeviceVerdict verify_on_device(const DeviceTree& t, const Processed& target, bool greedy,
                               int64_t max_depth) {
  const int64_t n = t.size;
  if (target.probs.size(0) != n) throw Error("device verification: rows do not match the tree");
  if (!greedy && !t.noise.defined()) throw Error("device verification: the tree has no noise");
  const auto host = read_step(t, target, choices(t, target.probs, greedy));
  const double* h = host.data_ptr<double>();
  const int64_t deepest = int64_t(h[0]), choice = int64_t(h[1]);
  const double *tok = h + 2, *par = tok + n, *dep = par + n, *rank = dep + n, *score = rank + n,
               *q = score + n, *top1 = q + n, *on_path = top1 + n;

  DeviceVerdict v;
  std::vector<int64_t> host_id(size_t(n), -1);
  std::vector<float> top;
  for (int64_t i = 0; i < n; ++i) {
    if (i > 0 && std::isinf(score[i])) continue;  // no draft mass: not part of the tree
    const int64_t parent = i == 0 ? -1 : host_id[size_t(par[i])];
    if (i > 0 && parent < 0)
      throw Error("device tree: a node's parent is missing (internal error)");
    host_id[size_t(i)] = v.tree.size();
    v.rows.push_back(i);
    v.tree.nodes.push_back(DraftNode{int64_t(tok[i]), parent, int64_t(dep[i]), score[i],
                                     float(q[i]), int32_t(rank[i])});
    v.tree.child_dist.emplace_back();
    v.tree.levels = std::max(v.tree.levels, int64_t(dep[i]));
    top.push_back(float(top1[i]));
  }
  v.tree.width = t.width;
  v.top1 = at::tensor(top, at::kFloat);
  v.keep = {0};
  for (int64_t j = 1; j < n; ++j) {
    if (on_path[j] == 0) continue;
    v.acc.path.push_back(host_id[size_t(j)]);
    v.keep.push_back(j);
  }
  v.acc.has_bonus = int64_t(dep[deepest]) < max_depth;
  if (v.acc.has_bonus) v.acc.bonus = choice;
  return v;
}

int64_t device_step_reads() {
  return g_reads.load();
}

}  // namespace adtree::decode
