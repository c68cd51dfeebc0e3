// Step traces (GUI.md "Beyond a single run", replay and the token distribution view): what one
// decoding step built and what verification did with it, kept so a finished run can be scrubbed,
// its trees drawn and every cell's target distribution inspected. Plain structs (no libtorch), so
// front ends hold and copy them; size-bounded by TraceOptions so a 1024-token run stays small
// (about 60 nodes and 20 candidates per step: a few hundred kB of JSON).
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace adtree::decode {

struct TraceOptions {
  bool enabled = false;
  int64_t top_n = 16;       // target probabilities kept per committed cell (sorted)
  int64_t max_nodes = 256;  // tree nodes kept per step (the rest are counted, not stored)
};

// One node of a step's draft tree. Node 0 is the root (the last committed token).
struct TraceNode {
  int64_t token = 0;
  int64_t parent = -1;
  int32_t depth = 0;
  int32_t rank = 0;       // among its parent's children (0 = the draft's best)
  float score = 0;        // cumulative draft score (what dynamic trees rank by; per rule)
  float q = 1;            // draft probability under the parent's draft distribution
  float p = 0;            // target probability of this token at its parent (what verify saw)
  bool accepted = false;  // on the accepted path (the root counts as accepted)
  bool guess = false;     // a free guess (the code above, a Jacobi guess): no draft model's draft
};

// The target's distribution where one cell was committed, and what the draft offered there.
struct CellTrace {
  int64_t cell = 0;
  int64_t token = 0;                // the committed token
  bool drafted = false;             // true: an accepted draft node; false: sampled by the target
  float top1 = 0;                   // the distribution's largest probability
  int32_t target_rank = 0;          // rank of `token` in the target distribution (0 = top-1)
  std::vector<int64_t> top_tokens;  // the top-N target tokens, most likely first
  std::vector<float> top_probs;
  std::vector<int64_t> cand_tokens;  // the draft's candidates here (children of the parent node)
  std::vector<float> cand_q;         // their draft probabilities
  std::vector<float> cand_p;         // their target probabilities
};

// ADT-Tree's decision for the step (SPEC_DECODING.md 5): where the shape came from, the outcome,
// and which rule moved it.
struct AdtTrace {
  int64_t d = 0, k = 0;            // the shape the tree was built with
  std::string origin;              // "left neighbour (r, c)", "average of left and up", ...
  int64_t accepted = 0;            // a: draft tokens accepted
  double alpha = 0, beta = 0;      // a / d and the threshold
  int64_t next_d = 0, next_k = 0;  // the post-update shape stored into the committed cells
  std::string rule;                // the rule that fired, in words
};

struct StepTrace {
  int64_t step = 0;
  std::vector<TraceNode> nodes;  // empty for AR steps; nodes[0] is the root otherwise
  int64_t nodes_dropped = 0;     // nodes beyond TraceOptions::max_nodes
  std::vector<int64_t> path;     // accepted node ids in depth order, root excluded
  bool has_bonus = false;
  int64_t bonus = -1;            // the token the target sampled after the path
  std::vector<CellTrace> cells;  // one per committed cell, in order
  bool has_adt = false;
  AdtTrace adt;
};

nlohmann::json to_json(const StepTrace& t);
// Throws adtree::Error naming the field when the JSON does not describe a trace.
StepTrace step_trace_from_json(const nlohmann::json& j);

// A cell's top-N target distribution laid out as bars for display (Figure 5 and the studio's
// distribution view): bar x = 1..n is the target's x-th most likely token, the committed token's
// bar kept apart so it can be drawn in its own colour, and the draft's candidates placed on their
// bars. Plain vectors, so each front end plots them its own way.
struct TopBars {
  int n = 0;                                     // bars: the shorter of top_tokens and top_probs
  std::vector<double> other_x, other_p;          // the bars of every token but the committed one
  std::vector<double> committed_x, committed_p;  // the committed token's bar (none beyond top N)
  std::vector<int> cand_bar;           // per draft candidate: its bar (0-based), -1 beyond top N
  std::vector<double> cand_x, cand_p;  // the candidates within the top N, at their bars
  double max_p = 0;                    // the tallest bar
  double min_p = 0;                    // the shortest bar above zero (0: none)
};
TopBars top_bars(const CellTrace& c);

// The region's character by its top-1 probability (the paper's Figures 4-5): "simple" regions are
// confident (top-1 >= 0.5), "complex" ones spread their mass.
const char* region_character(float top1);

}  // namespace adtree::decode
