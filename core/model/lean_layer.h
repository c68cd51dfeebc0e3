// The lean inference path of a decoder layer (docs/design/ARCHITECTURE.md, "Lean CPU path"):
// the same arithmetic as run_layer, written as plain loops over fp32 rows in per-thread work
// buffers, the way llama.cpp writes its CPU path. A decoding step on a small model is dominated
// by per-op overhead (about 20 ATen ops and fresh allocations per layer, docs/PERFORMANCE.md), so
// here RMSNorm, RoPE, the K/V write, attention over the cache, SwiGLU and the residual adds are
// fused loops and nothing is allocated once the buffers have grown to the step's size.
// run_layer stays the reference; tests/test_lean_layer.cpp pins the two together.
#pragma once
#include <ATen/ATen.h>

#include "model/gpt.h"

namespace adtree::model {

// Whether the lean path may run: fp32 CPU inference with prescaled q rows and a contiguous cache,
// and the process switch on (ADTREE_LEAN=0 turns it off for A/B runs; tests flip it directly).
bool lean_applies(const DecoderLayer& L, const at::Tensor& x, const KvCache* cache);
bool lean_enabled();
void set_lean_enabled(bool on);

// x [B, q, dim] fp32 contiguous, updated in place to the layer's output. Same contract as
// run_layer: writes the block's K/V into cache layer `layer` at plan.start (without a cache the
// block attends within itself).
void lean_run_layer(const DecoderLayer& L, int64_t n_head, double norm_eps, at::Tensor& x,
                    const BlockPlan& plan, KvCache* cache, int64_t layer);

}  // namespace adtree::model
