// The one speculative decoding loop (ARCHITECTURE.md): a draft source, a tree-shape policy and an
// acceptance rule, over the target's KV cache with in-place compaction of the accepted path.
// The Jacobi methods (jacobi.h) run through the same loop with their own drafts and rule.
#pragma once
#include <atomic>

#include "decode/ar_sampler.h"
#include "decode/draft_source.h"
#include "decode/lantern.h"
#include "decode/method.h"

namespace adtree::decode {

struct SpecOptions {
  int64_t budget = 58;                 // N for dynamic / ADT trees (already resolved from auto)
  const LanternRule* lantern = nullptr;  // relaxed acceptance when set
  int64_t max_tokens = -1;             // stop after this many tokens (tests); -1 = the whole grid
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
