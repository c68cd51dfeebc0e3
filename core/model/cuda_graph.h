// CUDA graphs of the fixed-shape forward (docs/design/GPU.md, "Graphs"). A captured forward replays
// its kernels with one launch, where eager dispatch pays ~10 us per op on the host. Built only
// against a CUDA libtorch whose CUDA headers compile it (core/CMakeLists.txt checks): elsewhere,
// and for a model that is not on a CUDA device, capture_forward returns null and callers run the
// fixed-shape forward eagerly. ADTREE_GRAPHS=0 turns capture off at run time.
#pragma once
#include <memory>

#include "model/gpt.h"
#include "model/static_forward.h"

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

// Captures gpt.forward_static(block, cache) after warm-up runs (which run the block once, so the
// cache holds its rows as an eager forward would). The block and the cache must outlive the
// result and keep their storage. Null when graphs are unavailable or the model is not on CUDA.
std::unique_ptr<GraphedForward> capture_forward(const Gpt& gpt, StaticBlock& block, KvCache& cache);

}  // namespace adtree::model
