// The decoding loop's recorder (SPEC_DECODING.md 7): turns each verified step into the one
// statistics format (step record, per-cell grids), the optional step trace, and the streamed
// StepEvent, so the loop itself reads as the algorithm.
#pragma once
#include <ATen/ATen.h>

#include <vector>

#include "decode/sampling.h"
#include "decode/stats/stats.h"
#include "decode/tree/draft_tree.h"
#include "decode/tree/proposer.h"
#include "decode/verify/acceptance.h"

namespace adtree::decode {

// What one step committed, as the loop saw it.
struct CommittedStep {
  const DraftTree& tree;
  const AcceptResult& acc;
  const Processed& target;                 // the verification rows (top1, view)
  const std::vector<int64_t>& new_tokens;  // cells first_cell ..
  const std::vector<int64_t>& parents;     // node whose row predicted each new token
  int64_t first_cell = 0;
};

class StepRecorder {
 public:
  StepRecorder(RunStats& stats, const TraceOptions& trace, const StepCallback& on_step)
      : stats_(stats), trace_(trace), on_step_(on_step) {}

  // The prefill: no tree, the target samples the first token from p0 (row 0).
  void prefill(const Processed& p0, int64_t token, double verify_ms, double sample_ms);
  // A verified tree step; `rec` carries its timings and budget, the rest is filled here.
  void step(StepRecord rec, const CommittedStep& s, const Proposer& proposer);
  // A step whose tokens land on the given cells, in that order (PJD: several rows at once); no
  // trace, since it verifies no tree. `rec` carries everything but the cells and the tokens.
  void cells_step(StepRecord rec, const std::vector<int64_t>& cells,
                  const std::vector<int64_t>& tokens, const std::vector<CellStats>& stats);

 private:
  void emit(const std::vector<int64_t>& tokens, const std::vector<CellStats>& cells,
            const StepTrace* trace);
  RunStats& stats_;
  const TraceOptions& trace_;
  const StepCallback& on_step_;
};

}  // namespace adtree::decode
