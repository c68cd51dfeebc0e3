// MAR's masking schedule (LTH14/mar models/mar.py sample_tokens, mask_by_order): over num_iter
// steps, floor(N cos(pi/2 (s + 1) / num_iter)) tokens stay masked after step s (at least one, at
// most one fewer than before; none after the last). The first entries of a random order stay
// masked longest, so step s predicts the order's entries [masked_after, masked_before). CFG's
// scale at a step: 1 + (cfg - 1) (N - masked_after) / N on the linear schedule, cfg itself on the
// constant one. AR, CSpD's rounds and the parity path all read the steps from here.
#pragma once
#include <cstdint>
#include <vector>

namespace adtree::decode {

struct MarScheduleStep {
  int64_t masked_before = 0, masked_after = 0;  // order entries still masked before / after
  double cfg = 1.0;                             // the guidance scale of this step's tokens
  int64_t count() const { return masked_before - masked_after; }
};

// Throws adtree::Error unless 1 <= num_iter <= n.
std::vector<MarScheduleStep> mar_masking_schedule(int64_t n, int num_iter, double cfg,
                                                  bool cfg_linear);

}  // namespace adtree::decode
