#include "decode/device/block_runner.h"

namespace adtree::decode {

model::Gpt::Output BlockRunner::run(const StepBuffers::Inputs& in, model::PositionBounds bounds) {
  const int64_t rows = in.tokens.size(1);
  auto it = buckets_.find(rows);
  if (it == buckets_.end()) {
    it = buckets_.emplace(rows, Bucket{model::new_static_block(cache_, rows), nullptr}).first;
  }
  auto& b = it->second;
  model::fill_static_block(b.block, cache_, gpt_.rope(), in.tokens, in.positions, in.mask, bounds);
  if (!b.graph) {
    // Capture runs warm-ups but records the kernels without running them: the replay below
    // computes this step's output.
    b.graph = model::capture_forward(gpt_, b.block, cache_);
    if (!b.graph) return gpt_.forward_static(b.block, cache_);
  }
  return b.graph->replay();
}

int64_t BlockRunner::graphs() const {
  int64_t n = 0;
  for (const auto& [rows, b] : buckets_) n += b.graph ? 1 : 0;
  return n;
}

}  // namespace adtree::decode
