// Compiled only where core/CMakeLists.txt found that it compiles (a CUDA libtorch with its CUDA
// headers); cuda_graph_none.cpp stands in elsewhere.
#include "model/gpu/cuda_graph.h"

#include <ATen/cuda/CUDAGraph.h>
#include <c10/core/InferenceMode.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <cstdlib>
#include <cstring>

namespace adtree::model {

namespace {

class CudaGraphForward : public GraphedForward {
 public:
  CudaGraphForward(const ForwardFn& forward, at::Device device) {
    c10::InferenceMode guard;
    const auto index = device.index();
    // Capture needs a stream other than the legacy default one; warm-up runs first on the same
    // stream, so the allocator's pools and cuBLAS's workspaces exist before capture starts.
    // Stream order by synchronising: capture happens once per block shape.
    auto side = c10::cuda::getStreamFromPool(false, index);
    c10::cuda::getCurrentCUDAStream(index).synchronize();
    {
      c10::cuda::CUDAStreamGuard on_side(side);
      for (int i = 0; i < 2; ++i) out_ = forward();
      side.synchronize();
      graph_.capture_begin();
      out_ = forward();
      graph_.capture_end();
      side.synchronize();  // the warm-up's cache rows are written before the caller goes on
    }
  }
  const Gpt::Output& replay() override {
    graph_.replay();
    return out_;
  }

 private:
  at::cuda::CUDAGraph graph_;
  Gpt::Output out_;
};

}  // namespace

bool graphs_available() {
  const char* v = std::getenv("ADTREE_GRAPHS");
  return !(v && std::strcmp(v, "0") == 0);
}

std::unique_ptr<GraphedForward> capture_graph(const ForwardFn& forward, at::Device device) {
  if (!graphs_available() || !device.is_cuda()) return nullptr;
  return std::make_unique<CudaGraphForward>(forward, device);
}

std::unique_ptr<GraphedForward> capture_forward(const Gpt& gpt, StaticBlock& block,
                                                KvCache& cache) {
  return capture_graph([&] { return gpt.forward_static(block, cache); }, gpt.device());
}

}  // namespace adtree::model
