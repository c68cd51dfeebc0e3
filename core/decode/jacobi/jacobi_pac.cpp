// SJD-PAC's proactive drafting (jacobi.h): the candidates of the first window cells and the tree
// they make. Recycling (adaptive continuation) and verification are JacobiState's own.
#include <algorithm>
#include <cmath>

#include "decode/jacobi/jacobi.h"
#include "util/error.h"

namespace adtree::decode {

// The candidates for one window cell: its draft first, then up to K - 1 distinct others, each a
// draw whose law the verifier assumes: without replacement from the draft's q (q minus the
// candidates before it); where the draft is a point mass (an initial guess), independent guesses,
// which are point masses too; when coupled, the next tokens of the cell's Gumbel-top-k ranking.
std::vector<int64_t> JacobiState::pac_candidates(const Draft& draft, int64_t cell, Rng& rng) const {
  std::vector<int64_t> cands{draft.token};
  const int64_t k = std::min<int64_t>(s_.pac_width, vocab_);
  const float* q = draft.q.defined() ? draft.q.data_ptr<float>() : nullptr;
  auto taken = [&](int64_t x) { return std::find(cands.begin(), cands.end(), x) != cands.end(); };
  if (rule_ == VerifyRule::Coupled) {
    const auto& w = noise_->weights(cell);
    while (int64_t(cands.size()) < k) {
      int64_t best = -1;
      double best_v = 0;
      for (int64_t x = 0; x < vocab_; ++x) {
        const double v = (q ? double(q[x]) : 1.0) * w[size_t(x)];
        if (v > best_v && !taken(x)) best = x, best_v = v;
      }
      if (best < 0) break;  // q has no further support
      cands.push_back(best);
    }
  } else if (q) {
    std::vector<double> law(q, q + vocab_);
    law[size_t(draft.token)] = 0;
    while (int64_t(cands.size()) < k) {
      double mass = 0;
      for (double v : law) mass += v;
      if (!(mass > 0)) break;
      const int64_t x = draw_index(law, rng);
      cands.push_back(x);
      law[size_t(x)] = 0;
    }
  } else {
    while (int64_t(cands.size()) < k) {
      const int64_t x = int64_t(rng.next() % uint64_t(vocab_));
      if (!taken(x)) cands.push_back(x);
    }
  }
  return cands;
}

// Node 0 the root; level j (1 <= j <= t = min(pac_levels, d)) holds every candidate of window cell
// j under every node of level j - 1, candidate 0 of the first parent first; then the chain of
// cells t + 1 .. d under level t's first node (candidate 0 all the way: the main path). Each
// node's child_dist is the q its children were drawn from.
DraftTree JacobiState::build_pac_tree(int64_t d, Rng& rng) {
  const auto& w = window_[0];
  const auto child_q = [&](int64_t depth) { return depth < d ? w[size_t(depth)].q : at::Tensor(); };
  const auto q_of = [&](const Draft& dr, int64_t x) {
    return dr.q.defined() ? dr.q[x].item<float>() : 1.0f;
  };
  DraftTree tree;
  tree.nodes.emplace_back();
  tree.child_dist.push_back(child_q(0));
  pac_main_.assign(size_t(d) + 1, 0);
  const int64_t t = std::min(s_.pac_levels, d);
  std::vector<int64_t> level{0};
  int64_t width = d > 0 ? 1 : 0;
  for (int64_t j = 1; j <= t; ++j) {
    const Draft& dr = w[size_t(j - 1)];
    const auto cands = pac_candidates(dr, root_index_ + j, rng);
    width = std::max<int64_t>(width, int64_t(cands.size()));
    std::vector<int64_t> next;
    for (const int64_t parent : level) {
      for (size_t c = 0; c < cands.size(); ++c) {
        DraftNode nd;
        nd.token = cands[c];
        nd.parent = parent;
        nd.depth = j;
        nd.rank = int32_t(c);
        nd.q = q_of(dr, cands[c]);
        nd.score = tree.nodes[size_t(parent)].score + std::log(std::max(double(nd.q), 1e-30));
        next.push_back(tree.size());
        tree.nodes.push_back(nd);
        tree.child_dist.push_back(child_q(j));
      }
    }
    pac_main_[size_t(j)] = next.front();
    level = std::move(next);
  }
  for (int64_t j = t + 1; j <= d; ++j) {
    const Draft& dr = w[size_t(j - 1)];
    DraftNode nd;
    nd.token = dr.token;
    nd.parent = pac_main_[size_t(j - 1)];
    nd.depth = j;
    nd.q = q_of(dr, dr.token);
    nd.score = tree.nodes[size_t(nd.parent)].score + std::log(std::max(double(nd.q), 1e-30));
    pac_main_[size_t(j)] = tree.size();
    tree.nodes.push_back(nd);
    tree.child_dist.push_back(child_q(j));
  }
  tree.levels = d;
  tree.width = width;
  pac_nodes_ = tree.size();
  return tree;
}

}  // namespace adtree::decode
