// Acceptance by draft position, for methods that draft a chain (CSpD): of the rounds whose test
// reached position j (the j - 1 drafts before it stood), how many kept the j-th draft. The test
// stops at the first refusal, so later positions are reached less often; the CSpD paper reports
// acceptance this way. Read from a run's steps (StepRecord drafted and accepted_head).
#pragma once
#include <cstdint>
#include <vector>

#include "decode/stats/stats.h"

namespace adtree::decode {

struct PositionAcceptance {
  std::vector<int64_t> reached, stood;  // index 0 = the round's first draft
  void add(const StepRecord& step);     // one round (steps of other methods are left out)
  void add(const PositionAcceptance& other);
  // stood / reached per position (0 where none reached it).
  std::vector<double> rates() const;
};

PositionAcceptance position_acceptance(const RunStats& stats);

}  // namespace adtree::decode
