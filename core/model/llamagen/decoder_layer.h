// One LlamaGen decoder layer (LLAMAGEN.md "Block"): RMSNorm, attention under 2-D RoPE over a KV
// cache, SwiGLU feed-forward, and where a block of new rows goes in the cache. The GPT stacks these
// (gpt.h); the draft head runs one (drafter.h); the lean CPU path (lean_layer.h) is the same
// arithmetic in fused loops. A unit of its own so that those three depend on it, not on each other.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <string>

#include "model/cpu/packed_gemm.h"
#include "model/llamagen/kv_cache.h"
#include "model/llamagen/rope2d.h"
#include "model/params.h"

namespace adtree::model {

// RMSNorm: normalise in fp32, cast back to the input dtype, THEN multiply by the weight.
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps);
// SwiGLU feed-forward w2(silu(w1 x) * w3 x).
at::Tensor swiglu(const at::Tensor& x, const at::Tensor& w1, const at::Tensor& w2,
                  const at::Tensor& w3);

// One decoder layer's tensors, as direct handles so the step loop does no map lookups. The draft
// head reuses the same layer code without the input norm (attn_norm undefined).
struct DecoderLayer {
  at::Tensor attn_norm, wqkv, wo, ffn_norm, w1, w2, w3;
  // Inference off the CPU only: w1 | w3 fused, and wqkv's q rows carrying the 1/sqrt(head_dim)
  // scale (q_prescaled), so a libtorch step has fewer ops.
  at::Tensor w13;
  bool q_prescaled = false;
  // Inference on an fp32 or bf16 CPU model only: the matrices packed for the lean path (fp32 or
  // bf16 panels, as the weights; w1 | w3 fused and the q rows prescaled, packed_q_prescaled), and
  // the norm weights in fp32 (the same tensors in an fp32 model), since the lean path's norms run
  // on fp32 rows whatever the weights' dtype. No unpacked copy is kept: the reference path reads
  // the stored matrices (docs/PERFORMANCE.md, "The whole picture": memory).
  PackedWeight p_wqkv, p_wo, p_w13, p_w2;
  bool packed_q_prescaled = false;
  at::Tensor attn_norm32, ffn_norm32;
};
class PackCache;  // pack_cache.h

// Handles to "<prefix>attention.wqkv.weight" etc. in `w` (attention_norm optional). For the lean
// path the panels come through `packs` when given (cached under pack_prefix + prefix + "wqkv"...).
DecoderLayer make_layer(const TensorMap& w, const std::string& prefix, int64_t dim,
                        int64_t head_dim, bool inference, PackCache* packs = nullptr,
                        const std::string& pack_prefix = "");

struct StaticBlock;  // static_forward.h

// Where a block of q new rows goes in a cache and what it may attend to (see Gpt::forward).
struct BlockPlan {
  at::Tensor cis;     // [q, head_dim/2] complex RoPE factors of the block's positions
  at::Tensor bias;    // [B, 1, q, keys] additive attention bias
  int64_t start = 0;  // first cache row written (len + scratch rows kept in front of the block)
  // Fixed-shape forwards (static_forward.h): the cache rows written, as a device tensor, and
  // attention over the whole cache (keys = capacity); `start` is then unused.
  at::Tensor rows;
};
// The range [lo, hi] that a block's positions are known to lie in. Positions built on the host are
// checked one by one; positions built on another device (the device step's tree) are checked by
// the range their builder guarantees, so the check reads nothing back. Where the values are on
// the host anyway, both are checked: a builder's range that does not hold is an internal error.
struct PositionBounds {
  int64_t lo = 0, hi = -1;
  bool known() const { return hi >= lo; }
};
BlockPlan plan_block(const Rope2d& rope, KvCache* cache, int64_t B, const at::Tensor& pos,
                     const at::Tensor& block_mask, const at::Tensor& block_key_valid,
                     PositionBounds bounds = {});
// Throws for a position outside the sequence, checked as PositionBounds says.
void check_positions(const Rope2d& rope, const at::Tensor& pos, PositionBounds bounds);
// plan_block's checks of the block against the positions and the cache (clear errors for every
// misuse); returns the first cache row the block is written to.
int64_t checked_block_start(const Rope2d& rope, const KvCache* cache, int64_t B,
                            const at::Tensor& pos, const at::Tensor& block_mask,
                            PositionBounds bounds = {});
// x + attn(norm(x)) then + ffn(norm(.)), writing K/V into cache layer `layer` at plan.start.
at::Tensor run_layer(const DecoderLayer& L, int64_t n_head, double norm_eps, const at::Tensor& x,
                     const BlockPlan& plan, KvCache* cache, int64_t layer, bool inference);

}  // namespace adtree::model
