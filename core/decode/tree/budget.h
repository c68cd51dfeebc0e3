// Verification budget N = auto (SPEC_DECODING.md 8): tree tokens are nearly free on a GPU but cost
// real FLOPs on a CPU, so N follows this machine's measured cost curve. The target is timed once
// per model at a few block sizes; N maximises expected tokens per second under a concave model of
// the tokens a step commits, tau(N) = 1 + gain * log2(1 + N) (diminishing returns of wider trees).
#pragma once
#include <cstdint>
#include <vector>

#include "decode/settings/method.h"
#include "decode/tree/draft_tree.h"
#include "decode/verify/acceptance.h"
#include "model/llamagen/gpt.h"

namespace adtree::decode {

struct BudgetChoice {
  int64_t budget = 0;
  std::vector<std::pair<int64_t, double>> cost_ms;  // measured (block size, ms per forward)
};

// Times the target (batch = CFG batch) and picks N from `candidates` under the fixed model above
// (the first guess, before a run has measured anything). Cached per model.
BudgetChoice choose_budget(const model::Gpt& target, int64_t batch, double gain = 0.35,
                           const std::vector<int64_t>& candidates = {1, 2, 4, 8, 12, 16, 24, 32, 48,
                                                                     kMaxAutoBudget});

// `--budget auto` during a run: N follows this run's measured acceptance. A tree's nodes are
// ranked by score (the order in which a budget keeps them); a_r is the share of steps whose
// accepted path held the node of rank r, so a step with budget N commits 1 + sum_{r <= N} a_r
// tokens on average. N maximises that over the timed cost of verifying N + 1 rows. Each rank's
// estimate starts from a prior worth 4 steps: the fixed model's marginal gain, and beyond the
// deepest rank tried that model's decay scaled to the rate measured there, so a larger N gets
// tried when the ranks the run has seen are accepted well.
class AdaptiveBudget {
 public:
  AdaptiveBudget(const BudgetChoice& timed, double gain = 0.35);
  int64_t current() const { return n_; }
  void observe(const DraftTree& tree, const AcceptResult& acc);

 private:
  double expected_tokens(int64_t n) const;
  std::vector<std::pair<int64_t, double>> cost_;  // (N, ms per verification of N + 1 rows)
  std::vector<double> hits_, trials_, prior_;     // per rank r = 1 .. max N (index r - 1)
  int64_t n_ = 1;
};

}  // namespace adtree::decode
