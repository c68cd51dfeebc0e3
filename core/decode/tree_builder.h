// Tree-shape policies' builders (SPEC_DECODING.md 3): a static tree from a path list (EAGLE-1) and
// the dynamic tree (EAGLE-2: expand by cumulative log-prob, top-K frontier, rerank to N). ADT-Tree
// builds dynamic trees whose (d, k) its policy chooses per step.
#pragma once
#include <string>
#include <vector>

#include "decode/draft_source.h"
#include "decode/draft_tree.h"
#include "decode/sampling.h"
#include "util/rng.h"

namespace adtree::decode {

// Each path is a list of ranks from the root: {0, 1} = the best child's second-best child.
struct StaticTreeSpec {
  std::vector<std::vector<int>> paths;
  int64_t depth() const;
  static StaticTreeSpec preset(const std::string& name);  // "eagle25" | "eagle57"
  void validate() const;  // every path's parent path present, ranks >= 0
};

// What a builder needs about the current step.
struct DraftContext {
  DraftSource& source;
  const LogitsProcessor& draft_proc;  // turns draft logits into q (CFG-mixed, same filtering)
  at::Tensor root_logits;             // [B, V] draft logits for the token after the root
  int64_t root_token = 0;
  int64_t root_index = 0;  // image index of the root
  int64_t max_levels = 0;  // draft levels that still fit in the image
};

// The draft head's top-1 probability for the token after the root: its own confidence, which the
// confidence-only shape baseline (Adjacency::Confidence) turns into (d, k).
double root_confidence(const DraftContext& ctx);

// Children of each node are its top ranks (greedy) or drawn without replacement from q (sampling).
DraftTree build_static_tree(DraftContext& ctx, const StaticTreeSpec& spec, bool sample_children,
                            Rng& rng);

// d draft levels (D = d - 1 expansion rounds), width k, keeping the N best nodes by score.
DraftTree build_dynamic_tree(DraftContext& ctx, int64_t levels, int64_t width, int64_t budget);

}  // namespace adtree::decode
