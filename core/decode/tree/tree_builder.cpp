#include "decode/tree/tree_builder.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "util/error.h"

namespace adtree::decode {

namespace {

// q rows [m, V] on the CPU for draft logits [B, m, V] predicting image indices `idx`.
at::Tensor draft_probs(const LogitsProcessor& proc, const at::Tensor& logits,
                       const std::vector<int64_t>& idx) {
  return proc.process_rows(logits, idx).probs.to(at::kCPU).contiguous();
}

// The `count` largest keys (> 0) in descending order, ties to the lower id.
std::vector<int64_t> top_by_key(const std::vector<double>& key, int64_t count) {
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < int64_t(key.size()); ++i) {
    if (key[size_t(i)] > 0) ids.push_back(i);  // never propose tokens the draft gives no mass
  }
  count = std::min<int64_t>(count, int64_t(ids.size()));
  auto better = [&](int64_t a, int64_t b) {
    return key[size_t(a)] > key[size_t(b)] || (key[size_t(a)] == key[size_t(b)] && a < b);
  };
  std::partial_sort(ids.begin(), ids.begin() + count, ids.end(), better);
  ids.resize(size_t(count));
  return ids;
}

}  // namespace

std::vector<Child> ChildPicker::pick(const at::Tensor& q_t, int64_t count, int64_t cell) const {
  auto q_c = q_t.to(at::kCPU, at::kFloat).contiguous();
  const float* q = q_c.data_ptr<float>();
  const int64_t V = q_c.numel();
  std::vector<double> key(static_cast<size_t>(V));
  double total = 0;
  if (rule == VerifyRule::Coupled) {
    const auto& w = noise->weights(cell);
    for (int64_t i = 0; i < V; ++i) total += key[size_t(i)] = double(q[i]) * w[size_t(i)];
  } else if (rule == VerifyRule::Sampled) {
    // Exponential race: the order of q / E (E ~ Exp(1)) is a draw without replacement from q.
    for (int64_t i = 0; i < V; ++i) {
      key[size_t(i)] = q[i] > 0 ? double(q[i]) / -std::log(1.0 - rng->uniform()) : 0.0;
    }
  } else {
    for (int64_t i = 0; i < V; ++i) key[size_t(i)] = q[i];
  }
  std::vector<Child> out;
  // Drawn children are scored by the q a draw is EXPECTED to have given the earlier draws,
  // E[q(x_j) | x_1 .. x_j-1] = sum q^2 / sum q over the tokens not drawn yet: whether a budget
  // keeps child j must not depend on which token child j turned out to be, or the kept children
  // would no longer be draws from q and the rejection rule would be biased.
  double mass = 0, square = 0;
  for (int64_t i = 0; i < V; ++i) mass += q[i], square += double(q[i]) * q[i];
  for (int64_t id : top_by_key(key, count)) {
    double inc = 0;
    if (rule == VerifyRule::Coupled) {
      inc = std::log(key[size_t(id)] / total);
    } else if (rule == VerifyRule::Sampled) {
      inc = std::log(std::max(square, 1e-300) / std::max(mass, 1e-300));
      mass -= q[id], square -= double(q[id]) * q[id];
    } else {
      inc = std::log(double(q[id]));
    }
    out.push_back(Child{id, q[id], inc});
  }
  return out;
}

int64_t StaticTreeSpec::depth() const {
  size_t d = 0;
  for (const auto& p : paths) d = std::max(d, p.size());
  return int64_t(d);
}

void StaticTreeSpec::validate() const {
  std::set<std::vector<int>> have;
  for (const auto& p : paths) {
    if (p.empty()) throw Error("static tree: empty path");
    for (int r : p) {
      if (r < 0) throw Error("static tree: negative rank");
    }
    have.insert(p);
  }
  for (const auto& p : paths) {
    if (p.size() > 1 && !have.count(std::vector<int>(p.begin(), p.end() - 1))) {
      throw Error("static tree: a path's parent path is missing");
    }
  }
}

StaticTreeSpec StaticTreeSpec::preset(const std::string& name) {
  StaticTreeSpec s;
  // One line per tree level, as EAGLE lists them.
  // clang-format off
  if (name == "eagle25") {  // 4 + 6 + 6 + 5 + 4 nodes
    s.paths = {{0}, {1}, {2}, {3},
               {0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {2, 0},
               {0, 0, 0}, {0, 0, 1}, {0, 1, 0}, {1, 0, 0}, {0, 2, 0}, {2, 0, 0},
               {0, 0, 0, 0}, {0, 0, 0, 1}, {0, 0, 1, 0}, {0, 1, 0, 0}, {1, 0, 0, 0},
               {0, 0, 0, 0, 0}, {0, 0, 0, 0, 1}, {0, 0, 0, 1, 0}, {0, 0, 1, 0, 0}};
  } else if (name == "eagle57") {  // 10 + 17 + 12 + 10 + 8 nodes
    s.paths = {{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, {9},
               {0, 0}, {0, 1}, {0, 2}, {0, 3}, {0, 4}, {0, 5}, {1, 0}, {1, 1}, {1, 2}, {1, 3},
               {2, 0}, {2, 1}, {2, 2}, {3, 0}, {3, 1}, {4, 0}, {5, 0},
               {0, 0, 0}, {0, 0, 1}, {0, 0, 2}, {0, 0, 3}, {0, 1, 0}, {0, 1, 1}, {0, 2, 0},
               {1, 0, 0}, {1, 0, 1}, {1, 1, 0}, {2, 0, 0}, {3, 0, 0},
               {0, 0, 0, 0}, {0, 0, 0, 1}, {0, 0, 0, 2}, {0, 0, 1, 0}, {0, 0, 2, 0},
               {0, 1, 0, 0}, {1, 0, 0, 0}, {0, 0, 3, 0}, {0, 1, 1, 0}, {2, 0, 0, 0},
               {0, 0, 0, 0, 0}, {0, 0, 0, 0, 1}, {0, 0, 0, 0, 2}, {0, 0, 0, 1, 0},
               {0, 0, 1, 0, 0}, {0, 1, 0, 0, 0}, {1, 0, 0, 0, 0}, {0, 0, 0, 2, 0}};
    // clang-format on
  } else {
    throw Error("unknown static tree '" + name + "' (eagle25 or eagle57)");
  }
  s.validate();
  return s;
}

DraftTree build_static_tree(DraftContext& ctx, const StaticTreeSpec& spec) {
  DraftTree tree;
  tree.nodes.push_back(DraftNode{ctx.root_token, -1, 0, 0.0, 1.f, 0});
  tree.child_dist.emplace_back();
  // Path (as rank list) -> node id, and node id -> draft row, level by level.
  std::map<std::vector<int>, int64_t> node_of{{{}, 0}};
  std::map<int64_t, int64_t> row_of{{0, kRootRow}};
  const int64_t levels = std::min(spec.depth(), ctx.max_levels);
  std::vector<int64_t> rows;
  for (int64_t level = 1; level <= levels; ++level) {
    // Parents at level-1 that have children in the spec, with how many children each needs.
    std::map<int64_t, int> need;  // parent node -> max rank + 1
    for (const auto& p : spec.paths) {
      if (int64_t(p.size()) != level) continue;
      auto it = node_of.find(std::vector<int>(p.begin(), p.end() - 1));
      if (it == node_of.end()) continue;  // parent was not drafted (ran out of candidates)
      need[it->second] = std::max(need[it->second], p.back() + 1);
    }
    if (need.empty()) break;
    // Draft distributions of those parents: the root's is given, deeper ones take one forward.
    std::vector<DraftInput> inputs;
    std::vector<int64_t> expand_ids, idx;
    for (const auto& [parent, n] : need) {
      if (parent == 0) continue;
      const auto& pn = tree.nodes[size_t(parent)];
      inputs.push_back(DraftInput{pn.token, row_of.at(pn.parent), ctx.root_index + pn.depth});
      expand_ids.push_back(parent);
      idx.push_back(ctx.root_index + pn.depth + 1);
    }
    if (need.count(0)) {
      tree.child_dist[0] =
          draft_probs(ctx.draft_proc, ctx.root_logits.unsqueeze(1), {ctx.root_index + 1})[0];
    }
    if (!inputs.empty()) {
      std::vector<int64_t> new_rows;
      auto logits = ctx.source.expand(inputs, new_rows);
      auto q = draft_probs(ctx.draft_proc, logits, idx);
      for (size_t i = 0; i < expand_ids.size(); ++i) {
        tree.child_dist[size_t(expand_ids[i])] = q[int64_t(i)];
        row_of[expand_ids[i]] = new_rows[i];
      }
    }
    // Children of each parent, then the spec's nodes at this level in path order.
    std::map<int64_t, std::vector<Child>> kids;
    for (const auto& [parent, n] : need) {
      const int64_t cell = ctx.root_index + tree.nodes[size_t(parent)].depth + 1;
      kids[parent] = ctx.picker.pick(tree.child_dist[size_t(parent)], n, cell);
    }
    for (const auto& p : spec.paths) {
      if (int64_t(p.size()) != level) continue;
      auto it = node_of.find(std::vector<int>(p.begin(), p.end() - 1));
      if (it == node_of.end()) continue;
      const auto& cand = kids[it->second];
      if (p.back() >= int(cand.size())) continue;
      const Child& ch = cand[size_t(p.back())];
      const auto& parent = tree.nodes[size_t(it->second)];
      node_of[p] = tree.size();
      tree.nodes.push_back(DraftNode{ch.token, it->second, level, parent.score + ch.log_score, ch.q,
                                     int32_t(p.back())});
      tree.child_dist.emplace_back();
    }
    tree.levels = level;
  }
  int64_t w = 0;
  for (const auto& p : spec.paths) w = std::max<int64_t>(w, p.back() + 1);
  tree.width = w;
  return tree;
}

double root_confidence(const DraftContext& ctx) {
  auto q = draft_probs(ctx.draft_proc, ctx.root_logits.unsqueeze(1), {ctx.root_index + 1})[0];
  return q.max().item<double>();
}

namespace {
// A candidate node of the dynamic tree; it remembers whether it was expanded (has a draft row and
// its children's q).
struct Candidate {
  DraftNode node;
  int64_t row = kRootRow - 1;  // draft row once expanded
  at::Tensor dist;
};
using Candidates = std::vector<Candidate>;

// The score below which nothing can enter the N best of `cands` (ties go to the earlier node, so a
// later node with exactly this score loses too); -inf while fewer than N are recorded.
double nth_best_score(const Candidates& cands, int64_t budget) {
  if (budget <= 0 || int64_t(cands.size()) - 1 < budget) return -HUGE_VAL;
  std::vector<double> s;
  for (size_t i = 1; i < cands.size(); ++i) s.push_back(cands[i].node.score);
  std::nth_element(s.begin(), s.begin() + (budget - 1), s.end(), std::greater<double>());
  return s[size_t(budget - 1)];
}

// Expands the frontier in one batched draft forward with the tree mask: each node's draft row and
// its children's q. Drops first the nodes that cannot have a child among the N best.
void expand_frontier(DraftContext& ctx, Candidates& cands, std::vector<int64_t>& frontier,
                     int64_t budget) {
  const double cut = nth_best_score(cands, budget);
  frontier.erase(std::remove_if(frontier.begin(), frontier.end(),
                                [&](int64_t f) { return cands[size_t(f)].node.score <= cut; }),
                 frontier.end());
  if (frontier.empty()) return;
  std::vector<DraftInput> inputs;
  std::vector<int64_t> idx;
  for (auto f : frontier) {
    const auto& n = cands[size_t(f)].node;
    inputs.push_back(DraftInput{n.token, cands[size_t(n.parent)].row, ctx.root_index + n.depth});
    idx.push_back(ctx.root_index + n.depth + 1);
  }
  std::vector<int64_t> rows;
  auto q = draft_probs(ctx.draft_proc, ctx.source.expand(inputs, rows), idx);
  for (size_t i = 0; i < frontier.size(); ++i) {
    cands[size_t(frontier[i])].row = rows[i];
    cands[size_t(frontier[i])].dist = q[int64_t(i)];
  }
}

// Each frontier node's top-K children at `level`, all recorded; returns the next frontier, the K
// best of the level. A child scores no higher than its parent or its earlier sibling (min), so the
// kept set stays a tree of candidate prefixes.
std::vector<int64_t> grow_level(DraftContext& ctx, Candidates& cands,
                                const std::vector<int64_t>& frontier, int64_t level,
                                int64_t width) {
  std::vector<int64_t> level_ids;
  for (auto f : frontier) {
    double prev = cands[size_t(f)].node.score;
    const double base = prev;
    int32_t rank = 0;
    const int64_t cell = ctx.root_index + level;
    for (const Child& ch : ctx.picker.pick(cands[size_t(f)].dist, width, cell)) {
      prev = std::min(prev, base + ch.log_score);
      level_ids.push_back(int64_t(cands.size()));
      cands.push_back(
          Candidate{DraftNode{ch.token, f, level, prev, ch.q, rank++}, kRootRow - 1, {}});
    }
  }
  std::stable_sort(level_ids.begin(), level_ids.end(), [&](int64_t a, int64_t b) {
    return cands[size_t(a)].node.score > cands[size_t(b)].node.score;
  });
  if (int64_t(level_ids.size()) > width) level_ids.resize(size_t(width));
  return level_ids;
}

// Rerank: the N best nodes by score. Scores never rise with depth or rank, and ties go to the
// shallower (earlier-recorded) node, so every kept node's parent and earlier siblings are kept.
DraftTree best_nodes(const Candidates& cands, int64_t budget, int64_t width) {
  std::vector<int64_t> order;
  for (int64_t i = 1; i < int64_t(cands.size()); ++i) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return cands[size_t(a)].node.score > cands[size_t(b)].node.score;
  });
  if (budget > 0 && int64_t(order.size()) > budget) order.resize(size_t(budget));
  std::sort(order.begin(), order.end());  // recording order: parents before children
  DraftTree tree;
  std::map<int64_t, int64_t> new_id{{0, 0}};
  tree.nodes.push_back(cands[0].node);
  tree.child_dist.push_back(cands[0].dist);
  for (auto c : order) {
    auto n = cands[size_t(c)].node;
    auto it = new_id.find(n.parent);
    if (it == new_id.end()) throw Error("dynamic tree: rerank broke the tree (internal error)");
    n.parent = it->second;
    new_id[c] = tree.size();
    tree.nodes.push_back(n);
    tree.child_dist.push_back(cands[size_t(c)].dist);
    tree.levels = std::max(tree.levels, n.depth);
  }
  tree.width = width;
  return tree;
}
}  // namespace

// EAGLE-2's dynamic tree: expand by cumulative score level by level, keep the top-K frontier, and
// rerank every recorded candidate to the N best.
DraftTree build_dynamic_tree(DraftContext& ctx, int64_t levels, int64_t width, int64_t budget) {
  levels = std::min(levels, ctx.max_levels);
  if (budget > 0) levels = std::min(levels, budget);  // N nodes hold at most N levels
  Candidates cands;
  cands.push_back(Candidate{DraftNode{ctx.root_token, -1, 0, 0.0, 1.f, 0}, kRootRow, {}});
  cands[0].dist =
      draft_probs(ctx.draft_proc, ctx.root_logits.unsqueeze(1), {ctx.root_index + 1})[0];
  std::vector<int64_t> frontier{0};
  for (int64_t level = 1; level <= levels; ++level) {
    if (level > 1) {
      expand_frontier(ctx, cands, frontier, budget);
      if (frontier.empty()) break;
    }
    frontier = grow_level(ctx, cands, frontier, level, width);
    if (frontier.empty()) break;
  }
  return best_nodes(cands, budget, width);
}

DraftTree root_only_tree(int64_t root_token) {
  DraftTree tree;
  tree.nodes.push_back(DraftNode{root_token, -1, 0, 0.0, 1.f, 0});
  tree.child_dist.emplace_back();
  return tree;
}

int64_t max_draft_rows(const MethodSettings& m, int64_t budget) {
  if (m.method == Method::Static)
    return int64_t(StaticTreeSpec::preset(m.static_tree.preset).paths.size());
  const bool adt = m.method == Method::Adt;
  int64_t levels = adt ? m.adt.d_max : m.dynamic_tree.depth + 1;
  const int64_t width = adt ? m.adt.k_max : m.dynamic_tree.width;
  if (budget > 0) levels = std::min(levels, budget);
  return std::max<int64_t>(0, levels - 1) * width;  // each expansion round feeds <= K rows
}

}  // namespace adtree::decode
