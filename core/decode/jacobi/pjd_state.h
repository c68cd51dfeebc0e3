// PJD's rows (Parallel Jacobi Decoding, Liao et al. 2026; SPEC_DECODING.md section 6.4): which
// image rows are active, what each feeds into the step's one forward, what each query may see, and
// what each row commits. The loop around it is pjd.cpp; the target model never appears here, so
// the rules can be tested on hand-made rows.
//
// A step feeds, for every active row r (top to bottom), its anchor (the token before the row's
// frontier: its newest committed token, or for a row that has none the last cell of the row above,
// a private placeholder while that cell is still open) and up to `window` - 1 drafts for the
// cells after it. The anchor's row predicts the frontier cell, draft i's row the cell after it.
// The anchors of committed cells are "flush" entries: their K/V rows are kept once they stop being
// a frontier, so every committed cell enters the cache exactly once.
//
// Visibility (the row-causal mask): a query sees cached cells and committed anchors earlier in
// raster order, its own row's placeholder and earlier drafts, and itself. With the mask off, a
// query also sees every draft earlier in raster order (the drafts of the rows above).
//
// Verification of row r's chain d_1..d_m against its rows p_0..p_m: the leading (top) row is SJD:
// min(1, p/q) left to right, at the first rejection a token from norm(max(0, p - q)), else a bonus
// from p_m (coupled: the drafts equal to the target's Gumbel-max choice, then that choice). A
// follower keeps only its accepted prefix: no residual, no bonus. New drafts: the cells this
// forward predicted after the new frontier take a fresh sample of their row (coupled: the
// Gumbel-max choice), except that after a rejection a draft that passed with probability > 0.5
// stays; the rest of the window is first guesses: the cell above if committed, else the cell to
// the left (spatial init), or random codes.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "decode/settings/method.h"
#include "decode/verify/coupling.h"
#include "util/rng.h"

namespace adtree::decode {

enum class PjdEntryKind { Committed, Placeholder, Draft };

struct PjdEntry {
  int64_t token = 0;
  int64_t cell = 0;  // raster cell the token stands at (its position)
  PjdEntryKind kind = PjdEntryKind::Draft;
  int64_t row = -1;       // the row whose chain uses it (-1: a committed cell only flushed)
  int64_t predicts = -1;  // the cell its output row predicts for that chain (-1: none)
};

struct PjdBlock {
  std::vector<PjdEntry> entries;  // fed in this order
  at::Tensor mask;                // [q, s + q] bool: s cached cells (cached_cells()) then the block
  struct Chain {
    int64_t row = 0;
    bool leading = false;
    std::vector<int64_t> entries;  // the anchor's entry, then the drafts' entries, in column order
  };
  std::vector<Chain> chains;  // the active rows, top to bottom
  int64_t drafted() const;    // draft entries fed
};

// What one step committed, in commit order (rows top to bottom, columns left to right).
struct PjdCommit {
  std::vector<int64_t> cells, tokens;
  std::vector<int32_t> depth;   // chain position of each (0 = the leading row's own sample)
  std::vector<int64_t> row_of;  // for each, the entry whose output row predicted it
  std::vector<int64_t> keep;    // block entries whose K/V rows join the cache, in block order
  int64_t relaxed = 0;          // committed tokens of follower rows (not the target's law)
};

class PjdState {
 public:
  // `rule`: Sampled or Coupled (the noise is the run's shared noise, read when coupled).
  PjdState(const PjdSettings& s, int64_t grid_h, int64_t grid_w, int64_t vocab, VerifyRule rule,
           CouplingNoise* noise);

  void start(int64_t first_token);  // cell 0, sampled from the prefill
  bool done() const { return done_cells_ == h_ * w_; }
  int64_t committed() const { return done_cells_; }
  int64_t active_rows() const { return int64_t(active_.size()); }
  int64_t row_tokens(int64_t row) const { return k_[size_t(row)]; }
  const std::vector<int64_t>& grid() const { return grid_; }  // -1 = open
  // The cells whose K/V rows the cache holds after its prefix, in cache order.
  const std::vector<int64_t>& cached_cells() const { return cached_; }
  // The raster prefix of committed cells (what a cancelled run returns).
  std::vector<int64_t> raster_prefix() const;
  int64_t max_block() const;  // the most entries one step can feed

  PjdBlock build(Rng& rng);
  // p: [q, V] CPU fp32, the target's processed row of every block entry (rows of entries without a
  // prediction are ignored). Commits, redrafts and starts rows; the caller then keeps the K/V rows
  // named in the result.
  PjdCommit accept(const PjdBlock& block, const at::Tensor& p, Rng& rng);

 private:
  struct Draft {
    int64_t token = 0;
    at::Tensor q;  // [V] the token was drawn from; undefined = point mass
  };
  int64_t cell(int64_t row, int64_t col) const { return row * w_ + col; }
  // The anchor cell of `row` (frontier - 1, or the last cell of the row above).
  int64_t anchor_cell(int64_t row) const;
  int64_t window_of(size_t active_index) const;  // fed entries of that row this step, anchor incl.
  void verify_chain(const PjdBlock::Chain& ch, const at::Tensor& p, Rng& rng, PjdCommit& out);
  void start_rows();
  at::Tensor build_mask(const std::vector<PjdEntry>& entries) const;
  int64_t random_code(Rng& rng) const;
  // A first guess for column `col` of `row`, whose drafts so far start at the row's frontier.
  int64_t guess(int64_t row, int64_t col, Rng& rng) const;

  PjdSettings s_;
  int64_t h_, w_, vocab_;
  VerifyRule rule_;
  CouplingNoise* noise_;
  std::vector<int64_t> grid_, k_;           // tokens per cell; committed tokens per row
  std::vector<std::vector<Draft>> drafts_;  // per row: drafts for columns k_r, k_r + 1, ...
  std::vector<int64_t> active_;             // active rows, top to bottom
  std::vector<int64_t> cached_;
  std::vector<uint8_t> has_kv_;
  int64_t done_cells_ = 0;
};

}  // namespace adtree::decode
