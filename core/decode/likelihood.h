// The target's likelihood of a finished token sequence (quality of lossy settings,
// docs/adt-tree.md): one teacher-forced pass over the whole sequence through the same logits
// processing as sampling (CFG mix, temperature; T = 1 when greedy), averaged negative
// log-probability per token.
#pragma once
#include <vector>

#include "decode/sampling.h"
#include "model/conditioning.h"
#include "model/llamagen/gpt.h"

namespace adtree::decode {

// Mean -log p(token_i | tokens_<i, condition) in nats. `cond` as for generate_ar.
double sequence_nll(const model::Gpt& gpt, const model::Condition& cond,
                    const std::vector<int64_t>& tokens, const SamplingParams& sampling);

}  // namespace adtree::decode
