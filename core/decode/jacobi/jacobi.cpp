#include "decode/jacobi/jacobi.h"

#include <algorithm>
#include <cmath>

#include "decode/sampling.h"
#include "decode/settings/method_table.h"
#include "util/error.h"

namespace adtree::decode {

namespace {
// Spatial init's neighbour per chain (row, column offsets): chain 0 copies the left cell, the
// paper's horizontal adjacency; further PathExplore chains start from other already-known
// neighbours, so K chains are K different guesses rather than K copies of one.
constexpr int64_t kNeighbours[4][2] = {{0, -1}, {-1, 0}, {-1, -1}, {-1, 1}};
}  // namespace

JacobiState::JacobiState(Method method, const JacobiSettings& settings, int64_t grid_h,
                         int64_t grid_w, int64_t vocab, int64_t n_img, VerifyRule rule,
                         CouplingNoise* noise)
    : method_(method),
      s_(settings),
      rule_(rule),
      noise_(noise),
      grid_h_(grid_h),
      grid_w_(grid_w),
      vocab_(vocab),
      n_img_(n_img) {
  if (!is_jacobi(method_)) {
    throw Error("JacobiState: '" + to_string(method_) +
                "' is not a Jacobi method (sjd, pathspec or sjd-pac)");
  }
  if (rule_ != VerifyRule::Sampled && rule_ != VerifyRule::Coupled &&
      rule_ != VerifyRule::Maximal) {
    throw Error("JacobiState: Jacobi drafts are verified sampled, coupled or maximal");
  }
  if (rule_ == VerifyRule::Coupled && !noise_) throw Error("JacobiState: coupling needs the noise");
  const bool ps = method_ == Method::PathSpec;
  paths_ = ps ? s_.paths : 1;
  length_ = ps ? s_.path_length : s_.window;
  if (paths_ < 1 || length_ < 1) throw Error("Jacobi paths and window length must be >= 1");
  window_.assign(size_t(paths_), {});
}

int64_t JacobiState::max_nodes() const {
  if (method_ != Method::SjdPac) return paths_ * length_;
  const int64_t t = std::min(s_.pac_levels, length_);
  int64_t n = 0, level = 1;
  for (int64_t j = 1; j <= t; ++j) n += (level *= s_.pac_width);
  return n + (length_ - t);
}

std::string JacobiState::label() const {
  std::string l = to_string(method_);
  if (method_ == Method::PathSpec && s_.path_relax > 0 && paths_ > 1) l += "+pathrelax";
  return l;
}

int64_t JacobiState::levels_for(int64_t root_index, int64_t max_levels) const {
  if (root_index + 1 < s_.start_margin) return 0;  // the next cell is inside the start margin
  const int64_t last_draftable = n_img_ - 1 - s_.stop_margin;
  return std::max<int64_t>(0, std::min({length_, max_levels, last_draftable - root_index}));
}

int64_t JacobiState::node_id(int64_t path, int64_t depth) const {
  return 1 + path * levels_ + (depth - 1);
}

int64_t JacobiState::row_of(int64_t path, int64_t depth) const {
  return method_ == Method::SjdPac ? pac_main_.at(size_t(depth)) : node_id(path, depth);
}

int64_t JacobiState::init_token(int64_t path, int64_t index, const std::vector<int64_t>& committed,
                                Rng& rng) const {
  // A point mass on any token is a valid draft for min(1, p/q): the test then accepts with p(x)
  // and the residual is p without x. So spatial init needs no distribution of its own.
  const auto random = [&] { return int64_t(rng.next() % uint64_t(vocab_)); };
  if (!s_.spatial_init || path >= 4) return random();
  const int64_t r = index / grid_w_, c = index % grid_w_;
  int64_t nr = r + kNeighbours[path][0], nc = c + kNeighbours[path][1];
  if (path == 0 && nc < 0) nr = r - 1, nc = c;  // start of a row: the cell above (as ADT does)
  if (nr < 0 || nc < 0 || nc >= grid_w_) return random();
  const int64_t cell = nr * grid_w_ + nc;
  if (cell < int64_t(committed.size())) return committed[size_t(cell)];
  // A cell of this window, filled before `index`: the guess to its left is also a guess.
  return window_[size_t(path)].at(size_t(cell - base_)).token;
}

DraftTree JacobiState::build_tree(const std::vector<int64_t>& committed, int64_t max_levels,
                                  Rng& rng) {
  const int64_t n = int64_t(committed.size()) - 1;  // image index of the root
  if (n < 0) throw Error("JacobiState::build_tree needs the root token");
  if (base_ < 0) base_ = n + 1;
  // Drafts for cells that got committed meanwhile are spent.
  const int64_t spent = n + 1 - base_;
  if (spent < 0) throw Error("JacobiState: the committed tokens went backwards");
  for (auto& w : window_)
    w.erase(w.begin(), w.begin() + std::min<int64_t>(spent, int64_t(w.size())));
  base_ = n + 1;

  const int64_t d = levels_for(n, max_levels);
  root_index_ = n;
  levels_ = d;
  for (int64_t k = 0; k < paths_; ++k) {
    auto& w = window_[size_t(k)];
    while (int64_t(w.size()) < d) {  // left to right, so spatial init can copy the slot before
      const int64_t t = init_token(k, base_ + int64_t(w.size()), committed, rng);
      w.push_back(Draft{t, {}});
    }
  }

  if (method_ == Method::SjdPac) {
    DraftTree tree = build_pac_tree(d, rng);
    tree.nodes[0].token = committed.back();
    return tree;
  }
  DraftTree tree;
  DraftNode root;
  root.token = committed.back();
  tree.nodes.push_back(root);
  tree.child_dist.emplace_back();  // chains are verified one by one in accept(), each with its q
  for (int64_t k = 0; k < paths_ && d > 0; ++k) {
    const auto& w = window_[size_t(k)];
    double score = 0;
    for (int64_t j = 1; j <= d; ++j) {
      const Draft& dr = w[size_t(j - 1)];
      DraftNode nd;
      nd.token = dr.token;
      nd.parent = j == 1 ? 0 : node_id(k, j - 1);
      nd.depth = j;
      nd.q = dr.q.defined() ? dr.q[dr.token].item<float>() : 1.0f;
      score += std::log(std::max(double(nd.q), 1e-30));
      nd.score = score;
      nd.rank = int32_t(k);  // which chain: the "rank" grid shows PathExplore's winner
      tree.nodes.push_back(nd);
      tree.child_dist.push_back(j < d ? w[size_t(j)].q : at::Tensor());
    }
  }
  tree.levels = d;
  tree.width = d > 0 ? paths_ : 0;
  return tree;
}

AcceptResult JacobiState::accept(const DraftTree& tree, const at::Tensor& p,
                                 const LanternRule* lantern, int64_t max_depth, Rng& rng) {
  p_cpu_ = p.to(at::kCPU, at::kFloat).contiguous();
  const int64_t d = levels_;
  if (method_ == Method::SjdPac) {
    if (tree.size() != pac_nodes_) throw Error("JacobiState::accept: not the tree built last");
    // The tree's own rules: every candidate of a node was drawn from its child_dist without
    // replacement (or is a point mass), so recursive rejection commits exact samples.
    return rule_ == VerifyRule::Coupled
               ? verify_coupled(tree, p_cpu_, *noise_, root_index_, max_depth)
               : verify_tree(tree, p_cpu_, ChildRule::WithoutReplacement, lantern, max_depth, rng);
  }
  if (tree.size() != 1 + paths_ * d) throw Error("JacobiState::accept: not the tree built last");
  if (rule_ == VerifyRule::Coupled) {
    return verify_coupled(tree, p_cpu_, *noise_, root_index_, max_depth);
  }
  if (d == 0)
    return verify_tree(tree, p_cpu_, ChildRule::WithoutReplacement, lantern, max_depth, rng);

  AcceptResult best;
  for (int64_t k = 0; k < paths_; ++k) {
    // Chain k alone: root + its d drafts, with q of each draft in its parent's child_dist, so
    // verify_tree's WithoutReplacement rule is exactly min(1, p/q) with residual
    // norm(max(0, p - q)) (a point mass when q is undefined).
    const auto& w = window_[size_t(k)];
    DraftTree chain;
    chain.nodes.push_back(tree.nodes[0]);
    chain.child_dist.push_back(w[0].q);
    std::vector<int64_t> rows{0};
    for (int64_t j = 1; j <= d; ++j) {
      DraftNode nd = tree.nodes[size_t(node_id(k, j))];
      nd.parent = j - 1;
      chain.nodes.push_back(nd);
      chain.child_dist.push_back(j < d ? w[size_t(j)].q : at::Tensor());
      rows.push_back(node_id(k, j));
    }
    chain.levels = d;
    chain.width = 1;
    auto pk = p_cpu_.index_select(0, at::tensor(rows, at::TensorOptions().dtype(at::kLong)));
    if (s_.path_relax > 0 && paths_ > 1) {
      // PathRelax (lossy): p'(x) = p(x) + lambda * mean over the other chains' tokens y at this
      // depth of p(y), with p this chain's row. verify_tree reads p(x) only in the test (a
      // rejected x leaves the residual), so raising the entry changes the test and nothing else.
      auto acc = pk.accessor<float, 2>();
      for (int64_t j = 1; j <= d; ++j) {
        const int64_t x = w[size_t(j - 1)].token;
        double mean = 0;
        for (int64_t o = 0; o < paths_; ++o) {
          if (o != k) mean += acc[j - 1][window_[size_t(o)][size_t(j - 1)].token];
        }
        mean /= double(paths_ - 1);
        acc[j - 1][x] = float(acc[j - 1][x] + s_.path_relax * mean);
      }
    }
    auto res = verify_tree(chain, pk, ChildRule::WithoutReplacement, lantern, max_depth, rng);
    // "The path with the longest accepted prefix wins" (SPEC_DECODING.md 6); ties go to the lower
    // chain, so K chains that all reject leave chain 0's residual sample as the bonus.
    if (k == 0 || res.path.size() > best.path.size()) {
      for (auto& id : res.path) id = node_id(k, id);  // chain depth -> node of the shared tree
      best = res;
    }
  }
  return best;
}

int64_t JacobiState::redraw(const at::Tensor& q, int64_t cell, const Draft* prev, Rng& rng) const {
  if (rule_ == VerifyRule::Coupled) return noise_->choose(q.data_ptr<float>(), cell);
  if (rule_ == VerifyRule::Maximal && prev) {
    return maximal_coupling_draw(prev->token,
                                 prev->q.defined() ? prev->q.data_ptr<float>() : nullptr,
                                 q.data_ptr<float>(), vocab_, rng);
  }
  return sample_from(q, rng);
}

void JacobiState::recycle(const AcceptResult& acc, Rng& rng) {
  if (!acc.has_bonus) return;  // the path reached the last cell: the image is complete
  const int64_t a = int64_t(acc.path.size()), d = levels_, n = root_index_;
  for (int64_t k = 0; k < paths_; ++k) {
    auto& w = window_[size_t(k)];
    std::vector<Draft> next;
    // The row of chain k's node at depth j predicted cell n + j + 1. For j > a that cell lies
    // beyond the new root (n + a + 1): draw its next draft from that row and remember the row as
    // its q. The row was computed after a rejected guess, so it is not the target's conditional,
    // but any q known before the draw keeps min(1, p/q) exact (SJD's recycling).
    for (int64_t j = a + 1; j <= d; ++j) {
      auto q = p_cpu_[row_of(k, j)].clone();
      const int64_t x = redraw(q, n + j + 1, size_t(j) < w.size() ? &w[size_t(j)] : nullptr, rng);
      next.push_back(Draft{x, q});
    }
    // Slots past what the forward predicted (cells > n + d + 1) keep their untested drafts.
    for (size_t i = size_t(d) + 1; i < w.size(); ++i) next.push_back(std::move(w[i]));
    w = std::move(next);
  }
  base_ = n + a + 2;
}

}  // namespace adtree::decode
