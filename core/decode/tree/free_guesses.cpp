#include "decode/tree/free_guesses.h"

#include <algorithm>
#include <queue>

#include "util/error.h"

namespace adtree::decode {

namespace {
constexpr double kPseudo = 2;  // each prior is worth this many observations
// Priors by kind. The code above, by neighbourhood: (cell above repeats its upper code) + 2 x (the
// cell to the left repeats its upper code); flat regions repeat. A target guess: SJD's guesses,
// which images mostly keep. The code to the left where the first candidate missed: on the shipped
// model's AR pictures 11% (`tools/free-guess-rates.py`; the code above alone hits 23%); and where
// there is no first candidate (the first row, before any guess), 18% as over all cells.
constexpr double kPrior[7] = {0.2, 0.45, 0.45, 0.8, 0.5, 0.12, 0.18};
constexpr int64_t kGuess = 4, kLeftAfterMiss = 5, kLeftAlone = 6;
}  // namespace

FreeGuesses::FreeGuesses(int64_t grid_h, int64_t grid_w, CouplingNoise* noise, bool left)
    : h_(grid_h), w_(grid_w), noise_(noise), left_(left) {
  start();
}

void FreeGuesses::start() {
  std::fill(std::begin(hits_), std::end(hits_), 0.0);
  std::fill(std::begin(trials_), std::end(trials_), 0.0);
  guess_.assign(size_t(h_ * w_), -1);
}

double FreeGuesses::chance(int64_t kind) const {
  const auto k = size_t(kind);
  return (hits_[k] + kPseudo * kPrior[k]) / (trials_[k] + kPseudo);
}

int64_t FreeGuesses::above_kind(const std::vector<int64_t>& tok, int64_t first, int64_t cell,
                                int64_t left) const {
  const bool up = cell >= 2 * w_ && tok[size_t(cell - w_)] == tok[size_t(cell - 2 * w_)];
  const int64_t over_left = cell - 1 - w_;  // the cell above the left neighbour
  const bool left_repeats =
      left >= 0 && over_left >= 0 && over_left < first && left == tok[size_t(over_left)];
  return int64_t(up) + 2 * int64_t(left_repeats);
}

FreeGuesses::Candidates FreeGuesses::candidates(const std::vector<int64_t>& committed,
                                                int64_t first, int64_t cell, int64_t left) const {
  Candidates out;
  if (cell < 0 || cell >= h_ * w_) return out;
  if (guess_[size_t(cell)] >= 0) {
    out.push_back({guess_[size_t(cell)], chance(kGuess)});
  } else if (cell >= w_ && cell - w_ < first) {  // the code above is committed
    out.push_back({committed[size_t(cell - w_)], chance(above_kind(committed, first, cell, left))});
  }
  // The left code, where it is a neighbour (not across a row end) and another code than the first.
  // A plan's left code may be unknown (-1): a node the head has not drafted yet.
  const int64_t primary = out.empty() ? -1 : out[0].token;
  if (left_ && cell % w_ != 0 && (left < 0 || left != primary))
    out.push_back({left, chance(primary < 0 ? kLeftAlone : kLeftAfterMiss)});
  return out;
}

std::vector<FreeNode> FreeGuesses::pick(const std::vector<int64_t>& committed,
                                        const std::vector<FreeAnchor>& anchors, int64_t count,
                                        int64_t max_depth, double leftover) const {
  const int64_t first = int64_t(committed.size());
  struct Pending {
    FreeNode node;
    double worth;
    int64_t order;  // ties go to the earlier offer
  };
  auto worse = [](const Pending& a, const Pending& b) {
    return a.worth != b.worth ? a.worth < b.worth : a.order > b.order;
  };
  std::vector<Pending> store;
  store.reserve(size_t(2 * (count + int64_t(anchors.size()))));
  std::priority_queue<Pending, std::vector<Pending>, decltype(worse)> open(worse, std::move(store));
  int64_t offers = 0;
  // Offers the candidates for the cell after a node at `depth` holding `left`, reached with
  // chance `reach` and its own children missing.
  auto offer = [&](int64_t parent, int64_t after, int64_t depth, int64_t left, double reach,
                   const std::vector<int64_t>& taken) {
    if (depth + 1 > max_depth) return;
    double miss = 1;
    bool first_of_cell = true;
    for (const auto& c : candidates(committed, first, first + depth, left)) {
      const bool drafted = c.token >= 0 && std::count(taken.begin(), taken.end(), c.token) > 0;
      const double r = reach * miss * c.p;
      if (!drafted && r > 0) {
        const double worth = r + (first_of_cell ? leftover * (1 - r) : 0.0);
        open.push({FreeNode{parent, after, depth + 1, c.token, r, first_of_cell}, worth, offers++});
      }
      miss *= 1 - c.p;
      first_of_cell = false;
    }
  };
  for (const auto& a : anchors) offer(a.node, -1, a.depth, a.token, a.open, a.taken);
  std::vector<FreeNode> picked;
  while (int64_t(picked.size()) < count && !open.empty()) {
    const auto best = open.top().node;
    open.pop();
    picked.push_back(best);
    offer(0, int64_t(picked.size()) - 1, best.depth, best.token, best.reach, {});
  }
  return picked;
}

void FreeGuesses::learn(const std::vector<int64_t>& tok, int64_t from, int64_t to) {
  for (int64_t c = from; c < to; ++c) {
    int64_t primary = -1, kind = -1;
    auto& g = guess_[size_t(c)];
    if (g >= 0) {  // a guess was offered for this cell: its hit rate, whatever the code above
      primary = g, kind = kGuess;
      g = -1;
    } else if (c >= w_) {
      primary = tok[size_t(c - w_)];
      kind = above_kind(tok, c, c, c % w_ != 0 ? tok[size_t(c - 1)] : -1);
    }
    if (kind >= 0) {
      trials_[size_t(kind)] += 1;
      hits_[size_t(kind)] += tok[size_t(c)] == primary ? 1 : 0;
    }
    // The left code where the first candidate missed and the left one differs from it, or
    // where there was none.
    if (c % w_ != 0 && tok[size_t(c)] != primary && tok[size_t(c - 1)] != primary) {
      const auto k = size_t(primary < 0 ? kLeftAlone : kLeftAfterMiss);
      trials_[k] += 1;
      hits_[k] += tok[size_t(c)] == tok[size_t(c - 1)] ? 1 : 0;
    }
  }
}

void FreeGuesses::keep_guesses(const DraftTree& tree, const AcceptResult& acc, int64_t first_cell,
                               int64_t committed, const at::Tensor& probs) {
  if (!noise_ || !probs.defined()) return;
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

int64_t add_free_nodes(DraftTree& tree, const std::vector<FreeNode>& picked) {
  std::vector<int64_t> index;
  for (const auto& f : picked) {
    if (f.token < 0) throw Error("a free candidate without a code cannot be verified");
    const int64_t parent = f.after >= 0 ? index.at(size_t(f.after)) : f.parent;
    const auto rank = std::count_if(tree.nodes.begin(), tree.nodes.end(),
                                    [&](const DraftNode& n) { return n.parent == parent; });
    // Below every drafted score: a budget never prefers a free candidate to a drafted one.
    // Copies: push_back may move the nodes.
    const int64_t depth = tree.nodes[size_t(parent)].depth + 1;
    const double score = tree.nodes[size_t(parent)].score - 1e6;
    tree.nodes.push_back(DraftNode{f.token, parent, depth, score, 0.f, int32_t(rank), true});
    tree.child_dist.emplace_back();
    tree.levels = std::max(tree.levels, depth);
    index.push_back(tree.size() - 1);
  }
  return int64_t(picked.size());
}

}  // namespace adtree::decode
