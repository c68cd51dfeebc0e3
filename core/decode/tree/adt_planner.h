// Cost-aware ADT-Tree (SPEC_DECODING.md 5.8): each step picks the tree that commits the most tokens
// per millisecond on this device, from the measured cost of its parts (step_cost.h) and from the
// acceptance its neighbourhood predicts. The adjacency shape (d, k) of AdtPolicy bounds the choice;
// within it the plan is a head tree of d' <= d levels and width k' <= k, plus a chain of free
// candidates (the target's guesses from rejected rows, else the codes above; no head call), or no
// draft at all: an AR-sized step, so no tree is taken that does not pay. The head's inputs then
// wait and are fed in one call when the next tree needs it. One step ahead is looked at: every
// chain cell verified but not committed leaves the target's guess for that cell (SJD's Jacobi
// guesses), which the next chain offers without a head call, so such cells are worth a little
// (AdtSettings::leftover); without that, chains stopped where they would commit everything and
// the next step had to call the head.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "decode/tree/adt_policy.h"
#include "decode/tree/draft_tree.h"
#include "decode/tree/step_cost.h"
#include "decode/verify/acceptance.h"
#include "decode/verify/coupling.h"

namespace adtree::decode {

constexpr int64_t kMaxGridChain = 16;  // grid candidates one step may add

struct StepPlan {
  int64_t d = 0;        // draft-head levels (0: the head is not called this step)
  int64_t k = 0;        // width of each head level
  int64_t n = 0;        // head nodes kept (the verification budget N)
  int64_t grid = 0;     // cells of the grid chain after the root (0: none)
  double tokens = 1;    // predicted committed tokens (the bonus included)
  double leftover = 0;  // what the guesses the chain leaves are worth to the next step, in tokens
  double ms = 0;        // predicted time of the step's forwards
};

// The plan in words, for step traces.
std::string describe(const StepPlan& p);

// Acceptance as the planner sees it. Head: pi[j][i], the chance that the head's rank-i child at
// level j is the target's token given its parent was accepted, learned from every verified tree
// (a prior worth a few steps first), scaled by the rank-0 hit rate of the cell's committed
// neighbours against the run's. Grid: the chance that a cell repeats the code above it, learned per
// neighbourhood kind (does the cell above repeat its own upper code; does the cell to the left).
class AdtPlanner {
 public:
  // `grid_ok`: the rule keeps the tokens AR's whatever the candidates (greedy, coupled).
  // `n_cap`: the largest N a tree may verify. `noise` (optional): the run's coupling noise, which
  // turns the target's rows of rejected nodes into guesses for the cells they predict.
  // `leftover`: the tokens a guess left for the next step is worth (AdtSettings::leftover); plans
  // are ranked by (tokens + leftover x chain cells verified but not committed) per ms.
  AdtPlanner(const StepCosts& costs, int64_t grid_h, int64_t grid_w, int64_t d_max, int64_t k_max,
             int64_t n_cap, bool grid_ok, CouplingNoise* noise = nullptr, double leftover = 0.0);

  void start();
  // The best plan for the tree whose root is committed.back(), within `bound`; `feed` rows wait
  // for the head (its first call this step feeds them).
  StepPlan plan(const std::vector<int64_t>& committed, TreeShape bound, int64_t feed,
                int64_t max_levels) const;
  // The codes of the free chain for the plan: for cell root + 1 + j the target's guess where an
  // earlier verification left one (a Jacobi guess: the coupled choice of a rejected node's row),
  // else the committed code above it.
  std::vector<int64_t> grid_tokens(const std::vector<int64_t>& committed, int64_t cells) const;
  // Learns from a verified tree and the tokens committed after it (`committed` includes them);
  // `probs` [nodes, V] (CPU, optional): the verification's rows, for the guesses.
  void observe(const DraftTree& tree, const AcceptResult& acc,
               const std::vector<int64_t>& committed, int64_t first_cell,
               const at::Tensor& probs = {});

  // Predictions, exposed for tests and traces.
  double head_level(int64_t level, int64_t k, double local) const;
  double local_factor(int64_t first_cell) const;
  double grid_hit(const std::vector<int64_t>& committed, int64_t cell, bool left_repeats) const;

 private:
  int64_t grid_kind(const std::vector<int64_t>& tok, int64_t cell, bool left_repeats) const;
  // The chain's code and hit chance at `cell` (j cells after the first), -1 where it has none.
  std::pair<int64_t, double> chain_cell(const std::vector<int64_t>& tok, int64_t cell, int64_t j,
                                        bool left_repeats) const;
  void learn_grid(const std::vector<int64_t>& tok, int64_t from, int64_t to);
  void learn_guesses(const DraftTree& tree, const AcceptResult& acc, int64_t first_cell,
                     int64_t committed, const at::Tensor& probs);

  StepCosts costs_;
  int64_t h_, w_, d_max_, k_max_, n_cap_;
  bool grid_ok_;
  double leftover_;  // tokens per guess left for the next step
  std::vector<std::vector<double>> hits_, trials_, prior_;  // [level - 1][rank]
  std::vector<int8_t> top1_;                                // per cell: -1 unknown, 0 miss, 1 hit
  // Kinds 0-3: the code above, by neighbourhood; kind 4: a target guess.
  double grid_hits_[5] = {}, grid_trials_[5] = {};
  CouplingNoise* noise_;
  std::vector<int64_t> guess_;  // per cell: the target's latest guess, -1 none
  int64_t learned_to_ = 0;      // cells below this are in the grid statistics
};

}  // namespace adtree::decode
