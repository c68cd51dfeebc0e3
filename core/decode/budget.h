// Verification budget N = auto (SPEC_DECODING.md 8): tree tokens are nearly free on a GPU but cost
// real FLOPs on a CPU, so N follows this machine's measured cost curve. The target is timed once
// per model at a few block sizes; N maximises expected tokens per second under a concave model of
// the tokens a step commits, tau(N) = 1 + gain * log2(1 + N) (diminishing returns of wider trees).
#pragma once
#include <cstdint>
#include <vector>

#include "model/gpt.h"

namespace adtree::decode {

struct BudgetChoice {
  int64_t budget = 0;
  std::vector<std::pair<int64_t, double>> cost_ms;  // measured (block size, ms per forward)
};

// Times the target (batch = CFG batch) and picks N from `candidates`. Cached per model.
BudgetChoice choose_budget(const model::Gpt& target, int64_t batch, double gain = 0.35,
                           const std::vector<int64_t>& candidates = {4, 8, 12, 16, 24, 32, 48, 58});

}  // namespace adtree::decode
