// The generations of `adtree bench`. Every method makes the same pictures (prompt x seed); for each
// picture the methods run one after another, and the whole set is repeated `rounds` times. A shared
// host's speed drifts by 10% and more within minutes (other tenants' use of the caches, memory
// bandwidth and clocks), so a method that ran minutes after AR met another machine: taken in turn,
// every method meets the same drift. A speed-up is the median over pictures and rounds of the ratio
// of AR's wall time to the method's for the same picture in the same round; the quartiles of those
// ratios say how far one run can be trusted.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "bench_breakdown.h"
#include "decode/settings/method.h"
#include "model/model_dir.h"

namespace adtree::cli {

struct BenchMethod {
  std::string name;  // as given, e.g. "adt:coupled"; "ar" is the baseline and comes first
  decode::DecodeRequest request;
};

// What one method's generations added up to.
struct MethodRuns {
  std::vector<double> wall, step;  // per generation: wall ms, median step ms
  std::vector<double> ratio;       // per generation: AR's wall ms (same picture, round) / wall
  double tokens = 0, forwards = 0, drafted = 0, steps = 0, forward_ms = 0, total_ms = 0;
  Breakdown breakdown;
};

struct BenchRuns {
  nlohmann::json runs = nlohmann::json::array();  // one entry per generation
  std::map<std::string, MethodRuns> by_method;
};

// methods[0] must be AR. Seeds 0 .. seeds-1 per prompt.
BenchRuns run_generations(const model::ModelBundle& m, const std::vector<BenchMethod>& methods,
                          const std::vector<std::string>& prompts, int64_t seeds, int64_t rounds);

// The table of methods (tau, drafts, forwards, wall, speed-up with its quartiles, ms per step)
// and the breakdown of where their time went, in the order of `names`; returns the JSON summary.
nlohmann::json print_summary(std::ostream& os, const BenchRuns& runs,
                             const std::vector<std::string>& names, int64_t image_tokens,
                             double floor_ms);

// The q-th quantile (0 .. 1, nearest rank) of the values (0 for none).
double quantile(std::vector<double> v, double q);

}  // namespace adtree::cli
