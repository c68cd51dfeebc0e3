// Filling StepTraces from the decoding loop's tensors (trace.h holds the plain structs). Kept apart
// from the loop so tracing costs nothing when it is off and the loop reads as the algorithm.
#pragma once
#include <ATen/ATen.h>

#include "decode/stats/trace.h"
#include "decode/tree/draft_tree.h"
#include "decode/verify/acceptance.h"

namespace adtree::decode {

// One committed cell: `dist` is the [V] distribution it was committed from (Processed::view),
// `tree`/`parent` the node that predicted it (null for AR steps: no candidates).
CellTrace trace_cell(const at::Tensor& dist, int64_t cell, int64_t token, bool drafted,
                     const DraftTree* tree, int64_t parent, const TraceOptions& o);

// A tree step: every node (up to o.max_nodes) with its target probability from `view` [n, V] (row
// i = the distribution after node i), the accepted path and bonus, and the committed cells
// starting at `first_cell`.
StepTrace trace_tree_step(int64_t step, const DraftTree& tree, const at::Tensor& view,
                          const AcceptResult& acc, int64_t first_cell, const TraceOptions& o);

}  // namespace adtree::decode
