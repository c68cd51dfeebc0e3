// The build without CUDA graphs (Debian's CPU libtorch, or a CUDA libtorch whose CUDA headers are
// missing): no capture, so callers run the fixed-shape forward eagerly.
#include "model/gpu/cuda_graph.h"

namespace adtree::model {

bool graphs_available() {
  return false;
}

std::unique_ptr<GraphedForward> capture_graph(const ForwardFn&, at::Device) {
  return nullptr;
}

std::unique_ptr<GraphedForward> capture_forward(const Gpt&, StaticBlock&, KvCache&) {
  return nullptr;
}

}  // namespace adtree::model
