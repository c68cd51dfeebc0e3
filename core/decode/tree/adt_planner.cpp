#include "decode/tree/adt_planner.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace adtree::decode {

namespace {
constexpr double kHeadPseudo = 4;  // the head's prior is worth this many observations per rank
constexpr double kGridPseudo = 2;
constexpr double kLocalPseudo = 2;
// Prior of a grid hit by neighbourhood kind: (cell above repeats its upper code) + 2 x (the cell to
// the left repeats its upper code). Flat regions repeat; the data moves these within a picture.
// Kind 4, a target guess (the coupled choice of a row that saw a wrong token before it): SJD's
// guesses, which images mostly keep.
constexpr double kGridPrior[5] = {0.2, 0.45, 0.45, 0.8, 0.5};
constexpr int64_t kGuessKind = 4;
}  // namespace

AdtPlanner::AdtPlanner(const StepCosts& costs, int64_t grid_h, int64_t grid_w, int64_t d_max,
                       int64_t k_max, int64_t n_cap, bool grid_ok, CouplingNoise* noise,
                       double leftover)
    : costs_(costs),
      h_(grid_h),
      w_(grid_w),
      d_max_(d_max),
      k_max_(k_max),
      n_cap_(n_cap),
      grid_ok_(grid_ok),
      leftover_(leftover),
      noise_(noise) {
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
  std::fill(std::begin(grid_hits_), std::end(grid_hits_), 0.0);
  std::fill(std::begin(grid_trials_), std::end(grid_trials_), 0.0);
  guess_.assign(size_t(h_ * w_), -1);
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

int64_t AdtPlanner::grid_kind(const std::vector<int64_t>& tok, int64_t cell,
                              bool left_repeats) const {
  const bool up = cell >= 2 * w_ && tok[size_t(cell - w_)] == tok[size_t(cell - 2 * w_)];
  return int64_t(up) + 2 * int64_t(left_repeats);
}

double AdtPlanner::grid_hit(const std::vector<int64_t>& committed, int64_t cell,
                            bool left_repeats) const {
  const auto kind = size_t(grid_kind(committed, cell, left_repeats));
  return (grid_hits_[kind] + kGridPseudo * kGridPrior[kind]) / (grid_trials_[kind] + kGridPseudo);
}

std::pair<int64_t, double> AdtPlanner::chain_cell(const std::vector<int64_t>& tok, int64_t cell,
                                                  int64_t j, bool left_repeats) const {
  if (cell >= int64_t(guess_.size())) return {-1, 0.0};
  if (guess_[size_t(cell)] >= 0) {
    const auto g = size_t(kGuessKind);
    return {guess_[size_t(cell)],
            (grid_hits_[g] + kGridPseudo * kGridPrior[g]) / (grid_trials_[g] + kGridPseudo)};
  }
  if (cell < w_ || j >= w_) return {-1, 0.0};  // no committed code above it
  return {tok[size_t(cell - w_)], grid_hit(tok, cell, left_repeats)};
}

std::vector<int64_t> AdtPlanner::grid_tokens(const std::vector<int64_t>& committed,
                                             int64_t cells) const {
  const int64_t first = int64_t(committed.size());
  std::vector<int64_t> out;
  for (int64_t j = 0; j < cells; ++j) {
    const auto [code, p] = chain_cell(committed, first + j, j, true);
    if (code < 0) break;
    out.push_back(code);
  }
  return out;
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
  // The grid chain's expected tokens by length: the first cell's left neighbour is the root;
  // further cells are reached only when the cell before matched, i.e. repeated the code above.
  std::vector<double> chain{0.0};
  if (grid_ok_) {
    const int64_t root = first - 1;
    const bool root_repeats = root >= w_ && committed[size_t(root)] == committed[size_t(root - w_)];
    // The free chain costs no head call, so the curve alone bounds it (not the adjacency depth).
    const int64_t cells = std::min({max_levels, kMaxGridChain, bound.d});
    double reach = 1;
    for (int64_t j = 0; j < cells; ++j) {
      const auto [code, p] = chain_cell(committed, first + j, j, j > 0 || root_repeats);
      if (code < 0) break;
      chain.push_back(chain.back() + (reach *= p));
    }
  }
  const double local = local_factor(first);
  const int64_t d_top = std::min({bound.d, max_levels, d_max_});
  for (int64_t d = 0; d <= d_top; ++d) {
    for (int64_t k = d == 0 ? 0 : 1; k <= (d == 0 ? 0 : std::min(bound.k, k_max_)); ++k) {
      // The head's path level by level; the grid chain pays where the head misses at level 1
      // (independence assumed: the two sources look at different evidence).
      double head = 0, reach = 1, miss1 = 1;
      for (int64_t l = 1; l <= d; ++l) {
        const double a = head_level(l, k, local);
        if (l == 1) miss1 = 1 - a;
        head += reach *= a;
      }
      const int64_t n = std::min(d * k, n_cap_);
      const double levels_ms = costs_.one_call ? 0.0 : double(d - 1) * costs_.head(k);
      const double head_ms = d > 0 ? costs_.head(std::max<int64_t>(feed, 1)) + levels_ms : 0.0;
      for (int64_t len = 0; len < int64_t(chain.size()); ++len) {
        const double in_chain = miss1 * chain[size_t(len)];
        const double tokens = 1 + head + in_chain;
        // Rejected rows leave guesses only where the rule offers them and the noise makes them.
        const double left = grid_ok_ && noise_ ? leftover_ * (double(len) - in_chain) : 0.0;
        const double ms = costs_.verify(1 + n + len) + head_ms;
        if ((tokens + left) / ms > best_rate * (1 + 1e-9)) {
          best_rate = (tokens + left) / ms;
          best = StepPlan{d, k, n, len, tokens, left, ms};
        }
      }
    }
  }
  return best;
}

void AdtPlanner::learn_grid(const std::vector<int64_t>& tok, int64_t from, int64_t to) {
  for (int64_t c = from; c < to; ++c) {
    auto& g = guess_[size_t(c)];
    if (g >= 0) {  // a guess was offered for this cell: its hit rate, whatever the code above
      grid_trials_[kGuessKind] += 1;
      grid_hits_[kGuessKind] += tok[size_t(c)] == g ? 1 : 0;
      g = -1;
      continue;
    }
    if (c < w_) continue;
    const bool left = c - 1 >= w_ && tok[size_t(c - 1)] == tok[size_t(c - 1 - w_)];
    const auto kind = size_t(grid_kind(tok, c, left));
    grid_trials_[kind] += 1;
    grid_hits_[kind] += tok[size_t(c)] == tok[size_t(c - w_)] ? 1 : 0;
  }
}

void AdtPlanner::learn_guesses(const DraftTree& tree, const AcceptResult& acc, int64_t first_cell,
                               int64_t committed, const at::Tensor& probs) {
  // Rows of the subtree below the last accepted node saw the right tokens up to the bonus cell
  // and one wrong one there: their guesses come first, then by score; each cell takes one.
  const int64_t last = acc.path.empty() ? 0 : acc.path.back();
  std::vector<int64_t> order;
  std::vector<char> below(size_t(tree.size()), 0);
  for (int64_t i = 1; i < tree.size(); ++i) {
    const auto parent = tree.nodes[size_t(i)].parent;
    below[size_t(i)] = parent == last || (parent > 0 && below[size_t(parent)]);
    order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    if (below[size_t(a)] != below[size_t(b)]) return below[size_t(a)] > below[size_t(b)];
    return tree.nodes[size_t(a)].score > tree.nodes[size_t(b)].score;
  });
  const auto p = probs.to(at::kFloat).contiguous();
  std::vector<char> set(size_t(tree.levels + 2), 0);
  for (int64_t i : order) {
    const int64_t depth = tree.nodes[size_t(i)].depth;
    const int64_t cell = first_cell + depth;  // what node i's row predicts
    if (cell < committed || cell >= int64_t(guess_.size()) || set[size_t(depth)]) continue;
    set[size_t(depth)] = 1;
    guess_[size_t(cell)] = noise_->choose(p[i].data_ptr<float>(), cell);
  }
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
  learn_grid(committed, learned_to_, int64_t(committed.size()));
  learned_to_ = int64_t(committed.size());
  if (grid_ok_ && noise_ && probs.defined())
    learn_guesses(tree, acc, first_cell, int64_t(committed.size()), probs);
}

}  // namespace adtree::decode
