// The lean inference path of a decoder layer (docs/design/ARCHITECTURE.md, "Lean CPU path"):
// the same arithmetic as run_layer, written as plain loops over fp32 rows in per-thread work
// buffers, the way llama.cpp writes its CPU path. A decoding step on a small model is dominated
// by per-op overhead (about 20 ATen ops and fresh allocations per layer, docs/PERFORMANCE.md), so
// here RMSNorm, RoPE, the K/V write, attention over the cache, SwiGLU and the residual adds are
// fused loops, the attention bias is a reused row buffer, and nothing is allocated once the
// buffers have grown to the step's size (the caller's output tensors aside).
// run_layer stays the reference; tests/model/test_lean_layer.cpp pins the two together.
#pragma once
#include <ATen/ATen.h>

#include "model/llamagen/decoder_layer.h"

namespace adtree::model {

// Whether the lean path may run: CPU inference on fp32 rows with the layer's matrices packed
// (fp32 or bf16 panels), prescaled q rows and a contiguous fp32 cache, and the process switch on
// (ADTREE_LEAN=0 turns it off for A/B runs; tests flip it directly).
bool lean_applies(const DecoderLayer& L, const at::Tensor& x, const KvCache* cache);
bool lean_enabled();
void set_lean_enabled(bool on);

// plan_block's plan as plain rows in the calling thread's work buffers: no tensor is built. The
// same checks and the same side effect (the block's key validity written into cache->key_bias).
// Valid until the thread's next lean_plan.
struct LeanPlan {
  const float* cis = nullptr;   // [q, head_dim]: (cos, sin) pairs of each block position
  const float* bias = nullptr;  // [B, q, n_keys] additive attention bias
  int64_t start = 0, n_keys = 0;
};
LeanPlan lean_plan(const Rope2d& rope, KvCache* cache, int64_t B, const at::Tensor& pos,
                   const at::Tensor& block_mask, const at::Tensor& block_key_valid,
                   PositionBounds bounds = {});

// x [B, q, dim] fp32 contiguous, updated in place to the layer's output. Same contract as
// run_layer: writes the block's K/V into cache layer `layer` at plan.start (without a cache the
// block attends within itself).
void lean_run_layer(const DecoderLayer& L, int64_t n_head, double norm_eps, at::Tensor& x,
                    const LeanPlan& plan, KvCache* cache, int64_t layer);

}  // namespace adtree::model
