#include "decode/jacobi/pjd_state.h"

#include <algorithm>
#include <set>

#include "decode/sampling.h"
#include "util/error.h"

namespace adtree::decode {

namespace {
// The paper's draft retention: after a rejection, a later draft that passed its own test with
// probability above this stays the next draft for its cell.
constexpr double kRetain = 0.5;

const float* row_ptr(const at::Tensor& p, int64_t i) {
  return p.data_ptr<float>() + i * p.size(1);
}
}  // namespace

int64_t PjdBlock::drafted() const {
  int64_t n = 0;
  for (const auto& e : entries) n += e.kind == PjdEntryKind::Draft ? 1 : 0;
  return n;
}

PjdState::PjdState(const PjdSettings& s, int64_t grid_h, int64_t grid_w, int64_t vocab,
                   VerifyRule rule, CouplingNoise* noise)
    : s_(s), h_(grid_h), w_(grid_w), vocab_(vocab), rule_(rule), noise_(noise) {
  if (rule_ != VerifyRule::Sampled && rule_ != VerifyRule::Coupled)
    throw Error("PJD verifies its rows sampled or coupled");
  if (rule_ == VerifyRule::Coupled && !noise_) throw Error("PJD: coupling needs the noise");
  if (s_.window < 1 || s_.row_offset < 1 || s_.max_rows < 0)
    throw Error("PJD: window and row offset must be >= 1, max rows >= 0");
  grid_.assign(size_t(h_ * w_), -1);
  k_.assign(size_t(h_), 0);
  drafts_.assign(size_t(h_), {});
  has_kv_.assign(size_t(h_ * w_), 0);
}

void PjdState::start(int64_t first_token) {
  grid_[0] = first_token;
  k_[0] = 1;
  done_cells_ = 1;
  active_ = {0};
  if (w_ == 1) active_.clear();
  start_rows();
}

std::vector<int64_t> PjdState::raster_prefix() const {
  std::vector<int64_t> out;
  for (auto t : grid_) {
    if (t < 0) break;
    out.push_back(t);
  }
  return out;
}

int64_t PjdState::max_block() const {
  const int64_t rows = s_.max_rows > 0 ? std::min(s_.max_rows, h_) : h_;
  return h_ + rows * s_.window;  // flushed frontier cells + every active row's window
}

int64_t PjdState::anchor_cell(int64_t row) const {
  const int64_t k = k_[size_t(row)];
  return k > 0 ? cell(row, k - 1) : cell(row - 1, w_ - 1);
}

int64_t PjdState::window_of(size_t i) const {
  const int64_t r = active_[i], k = k_[size_t(r)];
  const int64_t room =
      i == 0 ? w_ - k : k_[size_t(r - 1)] - k;  // followers stay under the row above
  return std::max<int64_t>(1, std::min(room, s_.window));
}

int64_t PjdState::random_code(Rng& rng) const {
  return std::min<int64_t>(vocab_ - 1, int64_t(rng.uniform() * double(vocab_)));
}

int64_t PjdState::guess(int64_t row, int64_t col, Rng& rng) const {
  if (!s_.spatial_init) return random_code(rng);
  if (row > 0 && grid_[size_t(cell(row - 1, col))] >= 0) return grid_[size_t(cell(row - 1, col))];
  if (col > 0) {
    if (grid_[size_t(cell(row, col - 1))] >= 0) return grid_[size_t(cell(row, col - 1))];
    const auto& d = drafts_[size_t(row)];
    const size_t j = size_t(col - 1 - k_[size_t(row)]);  // the draft to the left
    if (j < d.size()) return d[j].token;
  }
  return random_code(rng);
}

PjdBlock PjdState::build(Rng& rng) {
  PjdBlock b;
  // Committed cells not in the cache yet (the rows' frontier tokens, a finished row's last cell),
  // in raster order: their rows give the frontier predictions, and they are kept once they stop
  // being a frontier.
  std::vector<int64_t> entry_of(size_t(h_ * w_), -1);
  for (int64_t c = 0; c < h_ * w_; ++c) {
    if (grid_[size_t(c)] < 0 || has_kv_[size_t(c)]) continue;
    entry_of[size_t(c)] = int64_t(b.entries.size());
    b.entries.push_back(PjdEntry{grid_[size_t(c)], c, PjdEntryKind::Committed, -1, -1});
  }
  for (size_t i = 0; i < active_.size(); ++i) {
    const int64_t r = active_[i], k = k_[size_t(r)];
    PjdBlock::Chain ch{r, i == 0, {}};
    const int64_t a = anchor_cell(r);
    if (grid_[size_t(a)] >= 0) {
      if (entry_of[size_t(a)] < 0) throw Error("PJD: a frontier cell is cached (internal error)");
      auto& e = b.entries[size_t(entry_of[size_t(a)])];
      e.row = r, e.predicts = cell(r, k);
      ch.entries.push_back(entry_of[size_t(a)]);
    } else {
      // The last cell of the row above is still open: this row's own guess for it, which no
      // other row sees and which is never committed.
      const auto& up = drafts_[size_t(r - 1)];
      const size_t j = size_t(w_ - 1 - k_[size_t(r - 1)]);
      const int64_t t = j < up.size() ? up[j].token : guess(r - 1, w_ - 1, rng);
      ch.entries.push_back(int64_t(b.entries.size()));
      b.entries.push_back(PjdEntry{t, a, PjdEntryKind::Placeholder, r, cell(r, 0)});
    }
    auto& d = drafts_[size_t(r)];
    const int64_t n = window_of(i) - 1;
    while (int64_t(d.size()) < n) d.push_back(Draft{guess(r, k + int64_t(d.size()), rng), {}});
    for (int64_t j = 0; j < n; ++j) {
      ch.entries.push_back(int64_t(b.entries.size()));
      b.entries.push_back(
          PjdEntry{d[size_t(j)].token, cell(r, k + j), PjdEntryKind::Draft, r, cell(r, k + j + 1)});
    }
    b.chains.push_back(std::move(ch));
  }
  b.mask = build_mask(b.entries);
  return b;
}

at::Tensor PjdState::build_mask(const std::vector<PjdEntry>& e) const {
  const int64_t q = int64_t(e.size()), s = int64_t(cached_.size());
  auto mask = at::zeros({q, s + q}, at::TensorOptions().dtype(at::kBool));
  auto* m = mask.data_ptr<bool>();
  for (int64_t i = 0; i < q; ++i) {
    bool* row = m + i * (s + q);
    for (int64_t j = 0; j < s; ++j) row[j] = cached_[size_t(j)] < e[size_t(i)].cell;
    for (int64_t j = 0; j < q; ++j) {
      const auto &qi = e[size_t(i)], &kj = e[size_t(j)];
      const bool earlier = kj.cell < qi.cell;
      bool see = i == j;
      if (kj.kind == PjdEntryKind::Committed) see = see || earlier;
      if (kj.kind == PjdEntryKind::Placeholder)
        see = see || (qi.kind == PjdEntryKind::Draft && qi.row == kj.row);
      if (kj.kind == PjdEntryKind::Draft)
        see = see || (earlier && (qi.row == kj.row || !s_.row_mask));
      row[s + j] = see;
    }
  }
  return mask;
}

PjdCommit PjdState::accept(const PjdBlock& block, const at::Tensor& p_in, Rng& rng) {
  auto p = p_in.to(at::kCPU, at::kFloat).contiguous();
  PjdCommit out;
  for (const auto& ch : block.chains) verify_chain(ch, p, rng, out);
  while (!active_.empty() && k_[size_t(active_.front())] == w_) active_.erase(active_.begin());
  start_rows();
  // K/V rows to keep: committed cells fed in this block, unless still a frontier token.
  std::set<int64_t> anchors;
  for (int64_t r = 0; r < h_; ++r) {
    if (k_[size_t(r)] < w_ && (r > 0 || k_[size_t(r)] > 0)) anchors.insert(anchor_cell(r));
  }
  for (size_t j = 0; j < block.entries.size(); ++j) {
    const auto& e = block.entries[j];
    if (e.kind == PjdEntryKind::Placeholder || grid_[size_t(e.cell)] != e.token) continue;
    if (has_kv_[size_t(e.cell)] || anchors.count(e.cell)) continue;
    out.keep.push_back(int64_t(j));
    has_kv_[size_t(e.cell)] = 1;
    cached_.push_back(e.cell);
  }
  return out;
}

void PjdState::verify_chain(const PjdBlock::Chain& ch, const at::Tensor& p, Rng& rng,
                            PjdCommit& out) {
  const int64_t r = ch.row, k0 = k_[size_t(r)], m = int64_t(ch.entries.size()) - 1;
  auto& d = drafts_[size_t(r)];
  const int64_t V = p.size(1);
  auto prow = [&](int64_t i) { return row_ptr(p, ch.entries[size_t(i)]); };
  auto commit = [&](int64_t col, int64_t token, int32_t depth, int64_t from) {
    grid_[size_t(cell(r, col))] = token;
    ++k_[size_t(r)], ++done_cells_;
    out.cells.push_back(cell(r, col)), out.tokens.push_back(token), out.depth.push_back(depth);
    out.row_of.push_back(ch.entries[size_t(from)]);
    if (!ch.leading) ++out.relaxed;
  };
  // The chain's test, left to right, up to the first rejection.
  // Each draft's acceptance probability min(1, p / q) under its row (the retention rule reads it
  // beyond the first rejection too).
  std::vector<double> pass(size_t(m), 0.0);
  for (int64_t i = 1; i <= m && rule_ != VerifyRule::Coupled; ++i) {
    const auto& x = d[size_t(i - 1)];
    const double qx = x.q.defined() ? double(x.q.data_ptr<float>()[x.token]) : 1.0;
    pass[size_t(i - 1)] = qx > 0 ? std::min(1.0, double(prow(i - 1)[x.token]) / qx) : 0.0;
  }
  int64_t accepted = 0;
  for (int64_t i = 1; i <= m; ++i) {
    const auto& x = d[size_t(i - 1)];
    const bool ok = rule_ == VerifyRule::Coupled
                        ? x.token == noise_->choose(prow(i - 1), cell(r, k0 + i - 1))
                        : rng.uniform() < pass[size_t(i - 1)];
    if (!ok) break;
    ++accepted;
  }
  for (int64_t i = 1; i <= accepted; ++i)
    commit(k0 + i - 1, d[size_t(i - 1)].token, int32_t(i), i - 1);
  if (ch.leading) {
    // SJD's own token: the residual at the rejection, else the bonus after the whole chain.
    const int64_t col = k0 + accepted;
    const float* pr = prow(accepted);
    int64_t y;
    if (rule_ == VerifyRule::Coupled) {
      y = noise_->choose(pr, cell(r, col));
    } else {
      std::vector<double> res(pr, pr + V);
      if (accepted < m) {
        const auto& x = d[size_t(accepted)];
        if (x.q.defined()) {
          const float* q = x.q.data_ptr<float>();
          for (int64_t t = 0; t < V; ++t) res[size_t(t)] = std::max(0.0, res[size_t(t)] - q[t]);
        } else {
          res[size_t(x.token)] = 0;
        }
        double sum = 0;
        for (double v : res) sum += v;
        if (!(sum > 0)) res.assign(pr, pr + V);  // numerically empty: the row itself
      }
      y = draw_index(res, rng);
    }
    commit(col, y, 0, accepted);
  }
  // Next drafts: the cells this forward predicted after the new frontier, then older guesses.
  std::vector<Draft> next;
  for (int64_t c = k_[size_t(r)]; c <= k0 + m && c < w_; ++c) {
    const int64_t i = c - k0 + 1;  // the draft that stood at column c, if any (1-based)
    if (rule_ != VerifyRule::Coupled && i <= m && i > accepted + 1 &&
        pass[size_t(i - 1)] > kRetain) {
      next.push_back(d[size_t(i - 1)]);
      continue;
    }
    const float* pr = prow(c - k0);
    if (rule_ == VerifyRule::Coupled) {
      next.push_back(Draft{noise_->choose(pr, cell(r, c)), {}});
    } else {
      std::vector<double> w(pr, pr + V);
      next.push_back(Draft{draw_index(w, rng),
                           at::from_blob(const_cast<float*>(pr), {V}, at::kFloat).clone()});
    }
  }
  for (size_t j = size_t(m) + 1; j < d.size(); ++j) next.push_back(d[j]);  // beyond the window
  d = std::move(next);
}

void PjdState::start_rows() {
  const int64_t next = active_.empty() ? -1 : active_.back() + 1;
  if (active_.empty()) {
    for (int64_t r = 0; r < h_; ++r) {
      if (k_[size_t(r)] < w_) {
        active_.push_back(r);
        return;
      }
    }
    return;
  }
  // At most one new row per step, once the lowest row is far enough ahead.
  if (next < h_ && k_[size_t(active_.back())] >= s_.row_offset &&
      (s_.max_rows == 0 || int64_t(active_.size()) < s_.max_rows)) {
    active_.push_back(next);
  }
}

}  // namespace adtree::decode
