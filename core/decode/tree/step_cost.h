// What a decoding step's parts cost on this device (SPEC_DECODING.md 8 and 5.8): one target forward
// by block size (the verification of a tree's rows) and one draft-head forward by row count
// (feeding the committed tokens, or one expansion level). Cost-aware ADT-Tree plans each tree from
// these. The curve is timed once per loaded model on the device it runs on, or read from a JSON
// file, so the best tree for another device's curve (a GPU's nearly flat one) can be simulated
// here.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "model/llamagen/drafter.h"
#include "model/llamagen/gpt.h"
#include "model/llamagen/parallel_head.h"

namespace adtree::decode {

struct StepCosts {
  std::vector<std::pair<int64_t, double>> verify_ms;  // (rows incl. the root, ms), rows ascending
  std::vector<std::pair<int64_t, double>> head_ms;    // (rows, ms of one head forward)
  std::string source;                                 // "timed on this device" or the file
  // The head drafts every level in its first call (the parallel head): head_ms is that call, and
  // further levels cost nothing.
  bool one_call = false;

  // Piecewise-linear in the rows between measured points, linear beyond the last two.
  double verify(int64_t rows) const;
  double head(int64_t rows) const;

  nlohmann::json to_json() const;
  // Checks what a file may get wrong: empty or unsorted curves, rows < 1, costs not finite or <= 0.
  static StepCosts from_json(const nlohmann::json& j, const std::string& what);
};

// Whether any draft could pay on this curve: some block of 2 .. max_rows rows costs less per row
// than a one-token step. Where none does, even drafts that were always accepted (q tokens for a
// block of q rows) would commit no more tokens per ms than AR, so the cost rule runs plain AR.
bool drafts_can_pay(const StepCosts& c, int64_t max_rows);

// Every block of up to 64 rows costs one step and a head call a tenth of one: a GPU's curve, near
// enough (SPEC_DECODING.md 8); what the decoding loop plans with when it is given none.
StepCosts flat_step_costs();

// Reads a curve written by `adtree bench --cost-curve-out` (or by hand); a clear error names the
// file.
StepCosts load_step_costs(const std::string& path);

// Times the target at blocks of 1 .. 64 rows after half the image and the head at 1 .. 16 rows
// (medians of 9 interleaved rounds), once per (model, CFG batch) in this process.
// `head_batch`: the rows the head runs per node (1 for a head on the conditional stream alone).
StepCosts measure_step_costs(const model::Gpt& target, const model::Drafter& head, int64_t batch,
                             int64_t head_batch = -1);
// The same target curve with the parallel head's one call (one_call set).
StepCosts measure_parallel_costs(const model::Gpt& target, const model::ParallelHead& head,
                                 int64_t batch);

}  // namespace adtree::decode
