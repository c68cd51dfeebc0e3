// Plain autoregressive sampling (SPEC_DECODING.md section 1): one target forward per token with a
// KV cache, CFG as a batch of 2. The baseline every speed-up is measured against. Each token is the
// Gumbel-max sample argmax(log p + g) with the noise of its cell (coupling.h), so the image is a
// function of (model, prompt, settings, seed) alone and every coupled method commits the same one.
#pragma once
#include <atomic>
#include <cstdint>
#include <vector>

#include "decode/sampling.h"
#include "decode/stats/stats.h"
#include "model/llamagen/gpt.h"

namespace adtree::decode {

struct DecodeResult {
  std::vector<int64_t> tokens;  // raster order; shorter than the grid only when cancelled
  RunStats stats;
  bool cancelled = false;
};

// `cond` is the batch [cond; uncond] when params.uses_cfg(), else a batch of 1.
// `cancel` (optional) is checked between steps. With trace.enabled, every step's distribution is
// recorded (stats.traces, StepEvent::trace). `fixed_shapes`: every step after the prefill runs the
// fixed-shape forward (model/gpu/static_forward.h), replayed as a CUDA graph where graphs are
// built, and the token is chosen on the device with one read back; on by itself for a CUDA model,
// asked for by tests on the CPU. The tokens are the same either way.
DecodeResult generate_ar(const model::Gpt& gpt, const model::Condition& cond,
                         const SamplingParams& params, uint64_t seed,
                         const StepCallback& on_step = {},
                         const std::atomic<bool>* cancel = nullptr, const TraceOptions& trace = {},
                         bool fixed_shapes = false);

}  // namespace adtree::decode
