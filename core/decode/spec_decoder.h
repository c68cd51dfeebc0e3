// The one speculative decoding loop (ARCHITECTURE.md): a proposer drafts a tree, one target
// forward under the tree mask verifies it, a verifier accepts a path plus one target token, the
// KV cache keeps the accepted rows, and a recorder streams the statistics (proposer.h,
// verifier.h, step_recorder.h). Draft-tree methods and the Jacobi methods share it.
#pragma once
#include <atomic>

#include "decode/ar_sampler.h"
#include "decode/settings/method.h"
#include "decode/tree/budget.h"
#include "decode/tree/draft_source.h"
#include "decode/tree/step_cost.h"
#include "decode/verify/lantern.h"

namespace adtree::decode {

class Verifier;

struct SpecOptions {
  int64_t budget = 58;  // N for dynamic / ADT trees (already resolved from auto)
  const BudgetChoice* auto_budget = nullptr;  // set: N adapts to the run from this cost curve
  const LanternRule* lantern = nullptr;       // relaxed acceptance when set
  // The ADT cost rule's curve (step_cost.h); null: a flat one (flat_step_costs), as on a GPU.
  const StepCosts* costs = nullptr;
  int64_t max_tokens = -1;       // stop after this many tokens (tests); -1 = the whole grid
  Verifier* verifier = nullptr;  // replaces the rule's verifier (tests of the rule itself)
  // Pad every verification to its tree-size bucket (step_buffers.h): what CUDA graphs need; the
  // same tokens either way.
  bool pad_to_buckets = false;
  // Device steps verify through fixed-shape blocks (block_runner.h), captured as CUDA graphs where
  // they are built; on by itself for a CUDA model, asked for by tests on the CPU. Implies padding.
  bool fixed_shapes = false;
};

// `cond` as for generate_ar. The method must be "static", "dynamic" or "adt".
DecodeResult generate_speculative(const model::Gpt& target, DraftSource& source,
                                  const model::Condition& cond, const DecodeRequest& request,
                                  const SpecOptions& opts, const StepCallback& on_step = {},
                                  const std::atomic<bool>* cancel = nullptr);

// The same loop for the training-free Jacobi methods "sjd" and "pathspec" (SPEC_DECODING.md 6):
// the drafts come from a JacobiState window instead of a draft model. opts.budget is not used.
DecodeResult generate_jacobi(const model::Gpt& target, const model::Condition& cond,
                             const DecodeRequest& request, const SpecOptions& opts = {},
                             const StepCallback& on_step = {},
                             const std::atomic<bool>* cancel = nullptr);

}  // namespace adtree::decode
