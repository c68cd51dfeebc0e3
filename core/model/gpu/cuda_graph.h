// CUDA graphs of the fixed-shape forward (docs/design/GPU.md, "Graphs"). A captured forward replays
// its kernels with one launch, where eager dispatch pays ~10 us per op on the host. Built only
// against a CUDA libtorch whose CUDA headers compile it (core/CMakeLists.txt checks): elsewhere,
// and for a model that is not on a CUDA device, capture_forward returns null and callers run the
// fixed-shape forward eagerly. ADTREE_GRAPHS=0 turns capture off at run time.
#pragma once
#include <functional>
#include <memory>

#include "model/gpu/static_forward.h"
#include "model/llamagen/gpt.h"

namespace adtree::model {

class GraphedForward {
 public:
  virtual ~GraphedForward() = default;
  // Runs the captured forward on the current stream, reading the block and the cache as they are
  // now; the outputs live in the graph's memory and are overwritten by the next replay.
  virtual const Gpt::Output& replay() = 0;
};

// Whether this build has graphs, and they are not switched off.
bool graphs_available();

// Captures `forward` (a fixed-shape forward on `device`) after warm-up runs, which run it, so the
// cache holds the block's rows as an eager forward would. Everything it reads and writes must
// outlive the result and keep its storage. Null when graphs are unavailable or `device` is not a
// CUDA device.
using ForwardFn = std::function<Gpt::Output()>;
std::unique_ptr<GraphedForward> capture_graph(const ForwardFn& forward, at::Device device);

// The target's fixed-shape forward of `block` (Gpt::forward_static), captured.
std::unique_ptr<GraphedForward> capture_forward(const Gpt& gpt, StaticBlock& block, KvCache& cache);

}  // namespace adtree::model
