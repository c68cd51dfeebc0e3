#include "decode/stats/position_acceptance.h"

#include <algorithm>

namespace adtree::decode {

void PositionAcceptance::add(const StepRecord& step) {
  if (step.method != "cspd") return;
  const int64_t drafted = step.drafted, kept = step.accepted_head;
  if (int64_t(reached.size()) < drafted)
    reached.resize(size_t(drafted)), stood.resize(size_t(drafted));
  // Position i is reached when the i drafts before it stood.
  for (int64_t i = 0; i < drafted && i <= kept; ++i) {
    ++reached[size_t(i)];
    if (i < kept) ++stood[size_t(i)];
  }
}

void PositionAcceptance::add(const PositionAcceptance& other) {
  if (reached.size() < other.reached.size())
    reached.resize(other.reached.size()), stood.resize(other.reached.size());
  for (size_t i = 0; i < other.reached.size(); ++i)
    reached[i] += other.reached[i], stood[i] += other.stood[i];
}

std::vector<double> PositionAcceptance::rates() const {
  std::vector<double> out(reached.size(), 0.0);
  for (size_t i = 0; i < reached.size(); ++i)
    if (reached[i] > 0) out[i] = double(stood[i]) / double(reached[i]);
  return out;
}

PositionAcceptance position_acceptance(const RunStats& stats) {
  PositionAcceptance p;
  for (const auto& s : stats.steps) p.add(s);
  return p;
}

}  // namespace adtree::decode
