// Where a method's time goes in `adtree bench`: each step's time split into drafting (draft-model
// forwards), verification (the target forward), sampling (the rule and the Jacobi guesses) and
// bookkeeping (tree building, cache compaction, statistics), summed over a method's runs, and the
// tree shapes its steps used (for cost-aware ADT-Tree: the planner's choices, AR-sized steps
// included).
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "decode/stats/stats.h"

namespace adtree::cli {

struct Breakdown {
  double draft_ms = 0, verify_ms = 0, sample_ms = 0, other_ms = 0;
  int64_t steps = 0, grid = 0, drafted = 0;
  int64_t accepted_head = 0, accepted_guess = 0;  // accepted drafted tokens by origin
  std::map<std::string, int64_t> shapes;          // "d x k, N n" (+ grid) -> steps

  void add(const decode::RunStats& stats);
  double head_share() const;  // of the accepted drafted tokens: the head's (0 when none)
  nlohmann::json to_json() const;
};

// One table: per method the shares of the four parts, the grid share of the drafts and the most
// used shapes.
void print_breakdowns(std::ostream& os, const std::vector<std::string>& methods,
                      const std::map<std::string, Breakdown>& b);

}  // namespace adtree::cli
