// CSpD: continuous speculative decoding (arXiv 2411.11925; issue "CSpD", part 3), causal and
// KV-cached as the paper's algorithm (docs/design/SPEC_DECODING.md 6.5):
//   0. the target makes the first ceil(prefill_ratio N) tokens alone ("pre-filling");
//   1. a round: the draft proposes gamma tokens, each from its position's noises;
//   2. the target runs one backbone forward over them and its head over every drafted position
//      and the one after, in one batch, from the same noises (trajectory alignment);
//   3. drafts are accepted in order while u < r (decode/continuous/cspd_rule.h); the first
//      rejected one is replaced by a residual sample and the later drafts are dropped; when all
//      stand, the target's token after them is emitted too (the bonus);
//   4. both caches keep the accepted prefix.
// With a draft equal to the target every draft is accepted and the picture is AR's (tested).
#pragma once
#include "decode/continuous/continuous_run.h"
#include "model/continuous/continuous_gpt.h"

namespace adtree::decode {

// `cond`: the batch [caption; null] with CFG, else the caption alone; both models read it (they
// share the caption words: the run checks the vocabularies).
ContinuousResult generate_cspd(const model::ContinuousGpt& target,
                               const model::ContinuousGpt& draft,
                               const model::Condition& target_cond,
                               const model::Condition& draft_cond, const ContinuousSettings& s,
                               const ContinuousCallback& on_step = {},
                               const std::atomic<bool>* cancel = nullptr);

}  // namespace adtree::decode
