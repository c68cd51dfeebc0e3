// Tree-shape policies' builders (SPEC_DECODING.md 3): a static tree from a path list (EAGLE-1) and
// the dynamic tree (EAGLE-2: expand by cumulative score, top-K frontier, rerank to N). ADT-Tree
// builds dynamic trees whose (d, k) its policy chooses per step. How each node's children are
// picked from q is the verification rule's business (ChildPicker, SPEC_DECODING.md 4).
#pragma once
#include <string>
#include <vector>

#include "decode/sampling.h"
#include "decode/settings/method.h"
#include "decode/tree/draft_source.h"
#include "decode/tree/draft_tree.h"
#include "decode/verify/coupling.h"
#include "util/rng.h"

namespace adtree::decode {

// Each path is a list of ranks from the root: {0, 1} = the best child's second-best child.
struct StaticTreeSpec {
  std::vector<std::vector<int>> paths;
  int64_t depth() const;
  static StaticTreeSpec preset(const std::string& name);  // "eagle25" | "eagle57"
  void validate() const;  // every path's parent path present, ranks >= 0
};

// A node's child candidate: its token, its draft probability q and what it adds to the score.
struct Child {
  int64_t token = 0;
  float q = 0;
  double log_score = 0;
};

// Picks the children of a node from its draft distribution q [V] (CPU fp32), in rank order:
//   Deterministic  the top-k of q (ties to the lower id); score log q.
//   Sampled        k draws from q without replacement (Gumbel-top-k with fresh noise from the
//                  job's Rng), in draw order, which the rejection rule walks; score the log of
//                  the q a draw is expected to have given the earlier draws (never the drawn
//                  token's own q: a budget must not keep a child because of which token it is).
//   Coupled        the top-k of q * exp(g_cell) with the shared noise of the cell they would fill:
//                  the first is the draft's guess of the target's Gumbel-max token; score
//                  log(q w / sum q w), the draft's belief in that guess once the noise is known.
struct ChildPicker {
  VerifyRule rule = VerifyRule::Deterministic;
  CouplingNoise* noise = nullptr;  // Coupled
  Rng* rng = nullptr;              // Sampled
  std::vector<Child> pick(const at::Tensor& q, int64_t count, int64_t cell) const;
};

// What a builder needs about the current step.
struct DraftContext {
  DraftSource& source;
  const LogitsProcessor& draft_proc;  // turns draft logits into q (CFG-mixed, same filtering)
  const ChildPicker& picker;
  at::Tensor root_logits;  // [B, V] draft logits for the token after the root
  int64_t root_token = 0;
  int64_t root_index = 0;  // image index of the root
  int64_t max_levels = 0;  // draft levels that still fit in the image
};

// The draft head's top-1 probability for the token after the root: its own confidence, which the
// confidence-only shape baseline (Adjacency::Confidence) turns into (d, k).
double root_confidence(const DraftContext& ctx);

DraftTree build_static_tree(DraftContext& ctx, const StaticTreeSpec& spec);

// d draft levels (D = d - 1 expansion rounds), width k, keeping the N best nodes by score
// (budget <= 0: all). Drafting stops early where it cannot change the result: never more levels
// than N nodes can hold, and no expansion of a frontier node whose score is already below the N
// best recorded (children only score lower). Scores never rise along a node's children in rank
// order, so the N best form a tree whose kept children are a prefix of each node's candidates
// (what the rejection rule needs when children are draws).
DraftTree build_dynamic_tree(DraftContext& ctx, int64_t levels, int64_t width, int64_t budget);

// A tree of the root alone (an AR-sized step: nothing drafted).
DraftTree root_only_tree(int64_t root_token);

// Draft rows the head's scratch area needs for the largest tree these settings can build.
int64_t max_draft_rows(const MethodSettings& m, int64_t budget);

}  // namespace adtree::decode
