// The device step's verification forward on fixed shapes (docs/design/GPU.md, "Graphs"): one
// StaticBlock per tree-size bucket, refilled in place from the step buffers, and captured as a
// CUDA graph on first use where graphs are built (model/gpu/cuda_graph.h); elsewhere the same
// fixed-shape forward runs eagerly, which is what the CPU tests check.
#pragma once
#include <map>
#include <memory>

#include "decode/device/step_buffers.h"
#include "model/gpu/cuda_graph.h"
#include "model/gpu/static_forward.h"
#include "model/llamagen/gpt.h"

namespace adtree::decode {

class BlockRunner {
 public:
  BlockRunner(const model::Gpt& gpt, model::KvCache& cache) : gpt_(gpt), cache_(cache) {}
  // The forward of the step's padded inputs after the cache's committed rows. The outputs are
  // valid until the next run of the same bucket.
  model::Gpt::Output run(const StepBuffers::Inputs& in, model::PositionBounds bounds);
  int64_t graphs() const;  // buckets captured so far

 private:
  struct Bucket {
    model::StaticBlock block;
    std::unique_ptr<model::GraphedForward> graph;
  };
  const model::Gpt& gpt_;
  model::KvCache& cache_;
  std::map<int64_t, Bucket> buckets_;
};

}  // namespace adtree::decode
