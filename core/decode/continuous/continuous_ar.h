// Plain autoregressive sampling of the continuous family (issue "CSpD", part 3): per token one
// backbone step and the head's K reverse steps from the token's own noises. CSpD's baseline.
#pragma once
#include "decode/continuous/continuous_run.h"
#include "model/continuous/continuous_gpt.h"

namespace adtree::decode {

// `cond`: the batch [caption; null] with CFG (settings.cfg != 1), else the caption alone.
ContinuousResult generate_continuous_ar(const model::ContinuousGpt& m, const model::Condition& cond,
                                        const ContinuousSettings& s,
                                        const ContinuousCallback& on_step = {},
                                        const std::atomic<bool>* cancel = nullptr);

}  // namespace adtree::decode
