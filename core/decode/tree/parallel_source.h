// The parallel head as a draft source (model/llamagen/parallel_head.h): begin_step runs the head
// once on the root and keeps the K depths' logits; every expansion hands a node's children the
// logits of the level below it, with no forward. The codes above the drafted cells come from the
// committed tokens the source has seen.
#pragma once
#include <memory>

#include "decode/tree/draft_source.h"
#include "model/llamagen/parallel_head.h"

namespace adtree::decode {

std::unique_ptr<DraftSource> make_parallel_source(const model::ParallelHead& head,
                                                  const model::Gpt& target, int64_t batch);

}  // namespace adtree::decode
