#include "model/gpu/static_forward.h"

#include <c10/core/InferenceMode.h>

#include <limits>

#include "model/cpu/small_gemm.h"
#include "model/llamagen/drafter.h"
#include "util/device_sync.h"
#include "util/error.h"

namespace adtree::model {

namespace {
constexpr float kMaskedOut = -std::numeric_limits<float>::infinity();
}  // namespace

StaticBlock new_static_block(const KvCache& cache, int64_t q) {
  if (cache.k.empty()) throw Error("static block: the cache has no layers");
  const auto opts = cache.key_bias.options();
  const int64_t B = cache.batch();
  return StaticBlock{at::zeros({B, q}, opts.dtype(at::kLong)),
                     at::zeros({q}, opts.dtype(at::kLong)), at::zeros({q}, opts.dtype(at::kLong)),
                     at::zeros({B, 1, q, cache.capacity()}, opts.dtype(at::kFloat))};
}

void fill_static_block(StaticBlock& b, KvCache& cache, const Rope2d& rope, const at::Tensor& tokens,
                       const at::Tensor& positions, const at::Tensor& block_mask,
                       PositionBounds bounds) {
  const int64_t q = b.q(), len = cache.len, B = cache.batch();
  const int64_t scratch = block_mask.defined() ? block_mask.size(1) - q : 0;
  if (tokens.size(0) != B || tokens.size(1) != q || positions.numel() != q) {
    throw Error("static block: tokens [B, q] and positions [q] must match the block");
  }
  if (block_mask.defined() && (block_mask.size(0) != q || scratch < 0 || scratch > cache.pending)) {
    throw Error("static block: the block mask must be [q, s + q] with s <= the pending rows");
  }
  const int64_t start = len + scratch;  // the block goes after the scratch rows it may see
  if (start + q > cache.capacity()) {
    throw Error("static block: " + std::to_string(q) + " rows do not fit the KV cache (" +
                std::to_string(cache.capacity() - start) + " rows free)");
  }
  check_positions(rope, positions, bounds);
  c10::InferenceMode guard;
  const auto device = b.bias.device();
  b.tokens.copy_(to_device_async(tokens, device));
  b.positions.copy_(to_device_async(positions, device));
  b.rows.copy_(at::arange(start, start + q, b.rows.options()));
  // Committed rows: their key bias (condition padding stays hidden); scratch and block rows: the
  // mask, with the diagonal always visible; the rest of the capacity: hidden.
  b.bias.fill_(kMaskedOut);
  if (len > 0)
    b.bias.narrow(3, 0, len).copy_(cache.key_bias.narrow(1, 0, len).view({B, 1, 1, len}));
  const auto visible = block_mask.defined()
                           ? to_device_async(block_mask, device).to(at::kBool)
                           : at::ones({q, q}, b.bias.options().dtype(at::kBool)).tril();
  auto blk =
      at::zeros({q, scratch + q}, b.bias.options()).masked_fill(visible.logical_not(), kMaskedOut);
  blk.narrow(1, scratch, q).diagonal().zero_();
  b.bias.narrow(3, len, scratch + q).copy_(blk.view({1, 1, q, scratch + q}));
  cache.key_bias.narrow(1, start, q).zero_();  // once kept, the block's keys are visible
  cache.pending = scratch + q;
}

Gpt::Output Gpt::forward_static(const StaticBlock& b, KvCache& cache) const {
  c10::InferenceMode guard(inference_);
  if (!inference_) throw Error("forward_static is for inference");
  BlockPlan plan;
  plan.cis = rope_.cis().index_select(0, b.positions);
  plan.bias = b.bias;
  plan.rows = b.rows;
  auto h = embed_tokens(b.tokens).to(dtype_);
  for (int64_t l = 0; l < cfg_.n_layer; ++l) {
    h = run_layer(layers_[size_t(l)], cfg_.n_head, cfg_.norm_eps, h, plan, &cache, l, true);
  }
  Output out;
  out.hidden = rms_norm(h, norm_, cfg_.norm_eps);
  out.logits = inference_linear(out.hidden.contiguous(), output_).to(at::kFloat);
  return out;
}

Drafter::Output Drafter::forward_static(const StaticBlock& b, const at::Tensor& feats,
                                        KvCache& cache) const {
  c10::InferenceMode guard(inference_);
  if (!inference_) throw Error("forward_static is for inference");
  BlockPlan plan;
  plan.cis = target_.rope().cis().index_select(0, b.positions);
  plan.bias = b.bias;
  plan.rows = b.rows;
  const auto x = at::cat({target_.embed_tokens(b.tokens), feats.to(target_.dtype())}, -1);
  auto h = inference_linear(x.contiguous(), fc_w_, fc_b_);
  h = run_layer(layer_, target_.config().n_head, norm_eps_, h, plan, &cache, 0, true);
  Output out;
  out.hidden = h;
  out.logits =
      inference_linear(h.contiguous(), target_.weights().at("output.weight")).to(at::kFloat);
  return out;
}

}  // namespace adtree::model
