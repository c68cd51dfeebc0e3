#include "decode/tree/adt_planner.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace adtree::decode {

namespace {
constexpr double kHeadPseudo = 4;  // the head's prior is worth this many observations per rank
constexpr double kLocalPseudo = 2;

// What the g best free candidates add: tokens, and the deepest level they reach.
struct FreeGain {
  double tokens = 0;
  int64_t deepest = 0;
};
// The best first merge of the free candidates `below` each anchor (each list best first), their
// chances scaled by the chance `open` of their anchor, weighed as FreeGuesses::pick does with
// `leftover`; entry g of `gain` (filled) is for the g best.
void best_first_gains(const std::vector<std::vector<FreeNode>>& below,
                      const std::vector<double>& open, double leftover,
                      std::vector<FreeGain>& gain) {
  // The subtrees below different anchors do not interact: the best first order of all of them
  // merges each one's own.
  gain.assign(1, FreeGain{});
  std::vector<size_t> at(below.size(), 0);
  while (int64_t(gain.size()) <= kMaxFree) {
    int64_t best = -1;
    double top = -1, reach = 0;
    for (size_t l = 0; l < std::min(below.size(), open.size()); ++l) {
      if (at[l] >= below[l].size() || open[l] <= 0) continue;
      const auto& f = below[l][at[l]];
      const double r = open[l] * f.reach, worth = r + (f.first_of_cell ? leftover * (1 - r) : 0);
      if (worth > top) best = int64_t(l), top = worth, reach = r;
    }
    if (best < 0) break;
    const auto& f = below[size_t(best)][at[size_t(best)]++];
    gain.push_back(FreeGain{gain.back().tokens + reach, std::max(gain.back().deepest, f.depth)});
  }
}

}  // namespace

AdtPlanner::AdtPlanner(const StepCosts& costs, int64_t grid_h, int64_t grid_w, int64_t d_max,
                       int64_t k_max, int64_t n_cap, bool grid_ok, CouplingNoise* noise,
                       double leftover, bool in_tree)
    : costs_(costs),
      h_(grid_h),
      w_(grid_w),
      d_max_(d_max),
      k_max_(k_max),
      n_cap_(n_cap),
      grid_ok_(grid_ok),
      in_tree_(in_tree),
      leftover_(leftover),
      free_(grid_h, grid_w, noise, in_tree) {
  // Head prior: the top child right about half the time at level 1, the next ranks far less,
  // every level a little worse (the head drafts deeper levels from its own features).
  prior_.assign(size_t(d_max), std::vector<double>(size_t(k_max)));
  for (int64_t j = 0; j < d_max; ++j) {
    const double decay = std::pow(0.92, double(j));
    for (int64_t i = 0; i < k_max; ++i)
      prior_[size_t(j)][size_t(i)] = decay * (i == 0 ? 0.55 : 0.12 / double(i));
  }
  start();
}

void AdtPlanner::start() {
  hits_.assign(size_t(d_max_), std::vector<double>(size_t(k_max_), 0.0));
  trials_ = hits_;
  top1_.assign(size_t(h_ * w_), int8_t(-1));
  free_.start();
  learned_to_ = 0;
}

double AdtPlanner::head_level(int64_t level, int64_t k, double local) const {
  const size_t j = size_t(std::clamp<int64_t>(level, 1, d_max_) - 1);
  double p = 0;
  for (int64_t i = 0; i < std::min(k, k_max_); ++i) {
    p += (hits_[j][size_t(i)] + kHeadPseudo * prior_[j][size_t(i)]) /
         (trials_[j][size_t(i)] + kHeadPseudo);
  }
  return std::clamp(local * p, 0.0, 0.98);
}

double AdtPlanner::local_factor(int64_t first_cell) const {
  // The rank-0 outcomes of the committed neighbours (left = the root, and the row above) against
  // the run's level-1 rate: a region where the head was right predicts a head that is right.
  const double global = head_level(1, 1, 1.0);
  double hits = 0, n = 0;
  for (int64_t c : {first_cell - 1, first_cell - w_ - 1, first_cell - w_, first_cell - w_ + 1}) {
    if (c < 0 || c >= int64_t(top1_.size()) || top1_[size_t(c)] < 0) continue;
    hits += top1_[size_t(c)], n += 1;
  }
  const double local = (hits + kLocalPseudo * global) / (n + kLocalPseudo);
  return std::clamp(local / std::max(global, 1e-3), 0.25, 1.8);
}

std::string describe(const StepPlan& p) {
  std::ostringstream why;
  why.precision(3);
  why << (p.d == 0 && p.grid == 0
              ? "no draft (AR-sized step)"
              : "head " + std::to_string(p.d) + " x " + std::to_string(p.k) + ", N " +
                    std::to_string(p.n) + ", grid " + std::to_string(p.grid))
      << ": " << p.tokens << " tokens predicted in " << p.ms << " ms";
  if (p.leftover > 0) why << " (+" << p.leftover << " for the guesses left)";
  return why.str();
}

StepPlan AdtPlanner::plan(const std::vector<int64_t>& committed, TreeShape bound, int64_t feed,
                          int64_t max_levels) const {
  const int64_t first = int64_t(committed.size());  // the first cell a draft would fill
  StepPlan best;
  best.ms = costs_.verify(1);
  double best_rate = 1.0 / best.ms;
  // Free candidates cost no head call, so the curve alone bounds how many (not the adjacency
  // width); the adjacency depth bounds how deep they reach.
  const int64_t free_depth = std::min(bound.d, max_levels);
  const double local = local_factor(first);
  const int64_t d_top = std::min({bound.d, max_levels, d_max_});
  const auto below = free_below(committed, in_tree_ ? d_top : 0, free_depth);
  std::vector<double> open;  // per anchor (reused)
  std::vector<FreeGain> gain;
  // A_l(k) for every level and width the loops below ask for, once a step.
  const int64_t k_top = std::min(bound.k, k_max_);
  std::vector<std::vector<double>> a(size_t(d_top + 2), std::vector<double>(size_t(k_top + 1)));
  for (int64_t l = 1; l <= d_top + 1; ++l)
    for (int64_t k = 1; k <= k_top; ++k) a[size_t(l)][size_t(k)] = head_level(l, k, local);
  for (int64_t d = 0; d <= d_top; ++d) {
    for (int64_t k = d == 0 ? 0 : 1; k <= (d == 0 ? 0 : k_top); ++k) {
      // The head's path, level by level, and where free candidates may take over: below the
      // root where the first level misses, below the rank-0 node of level l (reached while every
      // rank-0 child before it was right) where its own children miss.
      double head = 0, reach = 1, spine = 1;
      open.assign(1, d > 0 ? 1 - a[1][size_t(k)] : 1.0);
      for (int64_t l = 1; l <= d; ++l) {
        head += reach *= a[size_t(l)][size_t(k)];
        spine *= a[size_t(l)][1];
        if (in_tree_) open.push_back(spine * (l < d ? 1 - a[size_t(l + 1)][size_t(k)] : 1.0));
      }
      const int64_t n = std::min(d * k, n_cap_);
      const double levels_ms = costs_.one_call ? 0.0 : double(d - 1) * costs_.head(k);
      const double head_ms = d > 0 ? costs_.head(std::max<int64_t>(feed, 1)) + levels_ms : 0.0;
      // The free candidates' chances of being reached, best first (independence from the head
      // assumed: the two look at different evidence).
      best_first_gains(below, open, guess_worth(), gain);
      for (int64_t g = 0; g < int64_t(gain.size()); ++g) {
        const auto& fg = gain[size_t(g)];
        const double tokens = 1 + head + fg.tokens;
        // Rejected rows leave guesses only where the rule offers them and the noise makes them:
        // one a cell, so only for the levels the free candidates add below the head's.
        const double guesses = std::max(0.0, double(fg.deepest - d) - fg.tokens);
        const double left = guess_worth() * guesses;
        const double ms = costs_.verify(1 + n + g) + head_ms;
        if ((tokens + left) / ms > best_rate * (1 + 1e-9)) {
          best_rate = (tokens + left) / ms;
          best = StepPlan{d, k, n, g, free_depth, tokens, left, ms};
        }
      }
    }
  }
  return best;
}

std::vector<std::vector<FreeNode>> AdtPlanner::free_below(const std::vector<int64_t>& committed,
                                                          int64_t deepest,
                                                          int64_t free_depth) const {
  // Below each anchor depth, for a unit chance of reaching it and of its children missing; the
  // codes of the head's nodes are unknown until it drafts them (-1).
  std::vector<std::vector<FreeNode>> below;
  for (int64_t l = 0; grid_ok_ && l <= deepest; ++l) {
    const FreeAnchor a{l, l, l == 0 ? committed.back() : -1, 1.0, {}};
    below.push_back(free_.pick(committed, {a}, kMaxFree, free_depth, guess_worth()));
  }
  return below;
}

int64_t AdtPlanner::add_free(DraftTree& tree, const std::vector<int64_t>& committed,
                             const StepPlan& plan) const {
  if (plan.grid <= 0) return 0;
  // The anchors of the tree as drafted: the root and the rank-0 path, with their children's codes.
  const double local = local_factor(int64_t(committed.size()));
  std::vector<FreeAnchor> anchors;
  double spine = 1;
  for (int64_t node = 0; node >= 0;) {
    const auto& nd = tree.nodes[size_t(node)];
    std::vector<int64_t> taken;
    int64_t next = -1;
    for (int64_t i = 1; i < tree.size(); ++i) {
      const auto& c = tree.nodes[size_t(i)];
      if (c.parent != node || c.grid) continue;
      taken.push_back(c.token);
      if (c.rank == 0) next = i;
    }
    const int64_t kids = int64_t(taken.size());
    const double miss = kids > 0 ? 1 - head_level(nd.depth + 1, kids, local) : 1.0;
    anchors.push_back(FreeAnchor{node, nd.depth, nd.token, spine * miss, taken});
    if (next >= 0) spine *= head_level(nd.depth + 1, 1, local);
    node = in_tree_ ? next : -1;
  }
  return add_free_nodes(tree,
                        free_.pick(committed, anchors, plan.grid, plan.grid_depth, guess_worth()));
}

void AdtPlanner::observe(const DraftTree& tree, const AcceptResult& acc,
                         const std::vector<int64_t>& committed, int64_t first_cell,
                         const at::Tensor& probs) {
  // Walk the accepted path: at each accepted node (the root first) the target's next token is
  // the next path node's, or the bonus; every head child there was a trial of its rank.
  std::vector<std::vector<int64_t>> kids(size_t(tree.size()));
  for (int64_t i = 1; i < tree.size(); ++i) kids[size_t(tree.nodes[size_t(i)].parent)].push_back(i);
  int64_t node = 0;
  for (size_t step = 0; step <= acc.path.size(); ++step) {
    const bool on_path = step < acc.path.size();
    if (!on_path && !acc.has_bonus) break;
    const int64_t target = on_path ? tree.nodes[size_t(acc.path[step])].token : acc.bonus;
    const int64_t level = tree.nodes[size_t(node)].depth + 1;
    for (int64_t c : kids[size_t(node)]) {
      const auto& nd = tree.nodes[size_t(c)];
      if (nd.grid || level > d_max_ || nd.rank >= k_max_) continue;
      auto& t = trials_[size_t(level - 1)][size_t(nd.rank)];
      t += 1;
      if (nd.token == target) hits_[size_t(level - 1)][size_t(nd.rank)] += 1;
      const int64_t cell = first_cell + level - 1;
      if (nd.rank == 0 && cell < int64_t(top1_.size())) top1_[size_t(cell)] = nd.token == target;
    }
    if (on_path) node = acc.path[step];
  }
  free_.learn(committed, learned_to_, int64_t(committed.size()));
  learned_to_ = int64_t(committed.size());
  if (grid_ok_) free_.keep_guesses(tree, acc, first_cell, int64_t(committed.size()), probs);
}

}  // namespace adtree::decode
