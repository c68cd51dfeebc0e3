// Fixed-shape forwards (docs/design/GPU.md, "Graphs"): a CUDA graph replays the kernels it
// captured on the same addresses and shapes, so a forward it captures cannot take a host offset
// into the cache or attend to a prefix whose length grows. A StaticBlock holds everything that
// changes from step to step in tensors of fixed shape, refilled in place before each run:
//   - the block's token ids and positions;
//   - the cache rows it writes (index_copy_ from a device tensor instead of a narrow at an offset);
//   - an additive bias over the WHOLE cache capacity: the committed rows keep their key bias, the
//     block's rows follow the block mask, and every other row is hidden.
// Attention then always spans the capacity: more arithmetic for short prefixes, the same result.
#pragma once
#include <ATen/ATen.h>

#include "model/llamagen/gpt.h"
#include "model/llamagen/kv_cache.h"

namespace adtree::model {

struct StaticBlock {
  at::Tensor tokens;     // [B, q] long
  at::Tensor positions;  // [q] long
  at::Tensor rows;       // [q] long: cache rows the block writes
  at::Tensor bias;       // [B, 1, q, capacity] fp32
  int64_t q() const { return rows.numel(); }
};

// A block of q rows for `cache` (its batch, capacity and device), contents unset.
StaticBlock new_static_block(const KvCache& cache, int64_t q);

// Refills `b` for a block after the cache's committed rows, as Gpt::forward runs it: `tokens`
// [B, q] and `positions` [q] on any device, `block_mask` [q, q] (default causal), or [q, s + q] to
// keep the first s pending rows as scratch the block may see (draft-tree levels) and write the
// block after them. A query always sees itself. Marks the scratch and block rows pending.
// `bounds` as for Gpt::forward.
void fill_static_block(StaticBlock& b, KvCache& cache, const Rope2d& rope, const at::Tensor& tokens,
                       const at::Tensor& positions, const at::Tensor& block_mask = {},
                       PositionBounds bounds = {});

}  // namespace adtree::model
