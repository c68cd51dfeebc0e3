#include "model/llamagen/decoder_layer.h"

#include <limits>

#include "io/mapped_pages.h"
#include "model/cpu/pack_cache.h"
#include "model/cpu/small_gemm.h"
#include "util/device_sync.h"
#include "util/error.h"

namespace adtree::model {

namespace {
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
}  // namespace

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  if (x.scalar_type() == at::kFloat) {
    return x * at::rsqrt(x.mul(x).mean(-1, /*keepdim=*/true).add_(eps)) * weight;
  }
  auto xf = x.to(at::kFloat);
  auto normed = xf * at::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return normed.to(x.scalar_type()) * weight;
}

at::Tensor swiglu(const at::Tensor& x, const at::Tensor& w1, const at::Tensor& w2,
                  const at::Tensor& w3) {
  return at::linear(at::silu(at::linear(x, w1)) * at::linear(x, w3), w2);
}

DecoderLayer make_layer(const TensorMap& w, const std::string& prefix, int64_t dim,
                        int64_t head_dim, bool inference, PackCache* packs,
                        const std::string& pack_prefix) {
  const std::string key = pack_prefix + prefix;
  DecoderLayer L;
  if (auto it = w.find(prefix + "attention_norm.weight"); it != w.end()) L.attn_norm = it->second;
  L.wqkv = w.at(prefix + "attention.wqkv.weight");
  L.wo = w.at(prefix + "attention.wo.weight");
  L.ffn_norm = w.at(prefix + "ffn_norm.weight");
  L.w1 = w.at(prefix + "feed_forward.w1.weight");
  L.w2 = w.at(prefix + "feed_forward.w2.weight");
  L.w3 = w.at(prefix + "feed_forward.w3.weight");
  if (inference) {
    // Fewer ops per step (decoding a small model is dominated by per-op overhead at q = 1):
    // one GEMM for w1 and w3, and the attention scale folded into the q rows of wqkv (RoPE is
    // linear, so scaling before the rotation equals scaling the scores).
    const double scale = 1.0 / std::sqrt(double(head_dim));
    L.p_wqkv = pack_with(packs, key + "wqkv", {L.wqkv}, dim, float(scale));
    if (L.p_wqkv.defined()) {
      // The lean path: the fused and scaled matrices live only in their packed panels, packed
      // straight from the stored ones (no concatenated or scaled copy to allocate and fault in).
      L.p_wo = pack_with(packs, key + "wo", {L.wo});
      L.p_w13 = pack_with(packs, key + "w13", {L.w1, L.w3});
      L.p_w2 = pack_with(packs, key + "w2", {L.w2});
      L.packed_q_prescaled = true;
      // Read only by the reference path from now on: their mapped pages go back (they fault in
      // again if that path runs), so packing a large model one layer at a time keeps the load's
      // peak near the packed size.
      for (const auto* t : {&L.wqkv, &L.wo, &L.w1, &L.w2, &L.w3}) io::release_mapped_pages(*t);
      if (L.attn_norm.defined()) L.attn_norm32 = L.attn_norm.to(at::kFloat).contiguous();
      L.ffn_norm32 = L.ffn_norm.to(at::kFloat).contiguous();
    } else {
      L.w13 = at::cat({L.w1, L.w3}, 0).contiguous();
      L.wqkv = L.wqkv.clone();
      L.wqkv.narrow(0, 0, dim).mul_(scale);
      L.q_prescaled = true;
    }
  }
  return L;
}

namespace {
void check_position(int64_t p, const Rope2d& rope) {
  if (p < 0 || p >= rope.seq_len()) {
    throw Error("forward: position " + std::to_string(p) + " is outside the sequence (" +
                std::to_string(rope.seq_len()) + " positions)");
  }
}
}  // namespace

void check_positions(const Rope2d& rope, const at::Tensor& pos_in, PositionBounds bounds) {
  if (bounds.known()) {
    check_position(bounds.lo, rope);
    check_position(bounds.hi, rope);
    if (!pos_in.device().is_cpu()) return;  // reading the values back would cost a sync
  }
  // Host positions (the host builds them): checked one by one, no device sync.
  auto host = pos_in.device().is_cpu() ? pos_in.to(at::kLong).contiguous() : pos_in.to(at::kCPU);
  const int64_t* p = host.data_ptr<int64_t>();
  for (int64_t i = 0; i < pos_in.numel(); ++i) {
    check_position(p[i], rope);
    if (bounds.known() && (p[i] < bounds.lo || p[i] > bounds.hi)) {
      throw Error("forward: position " + std::to_string(p[i]) + " is outside its builder's range " +
                  std::to_string(bounds.lo) + ".." + std::to_string(bounds.hi) +
                  " (internal error)");
    }
  }
}

int64_t checked_block_start(const Rope2d& rope, const KvCache* cache, int64_t B,
                            const at::Tensor& pos_in, const at::Tensor& block_mask,
                            PositionBounds bounds) {
  const int64_t q = pos_in.numel();
  check_positions(rope, pos_in, bounds);
  const int64_t scratch = block_mask.defined() ? block_mask.size(1) - q : 0;
  if (scratch < 0 || (block_mask.defined() && block_mask.size(0) != q)) {
    throw Error("forward: block mask must be [q, scratch + q]");
  }
  const int64_t prefix = cache ? cache->len : 0;
  if (cache) {
    if (cache->batch() != B) throw Error("forward: cache batch differs from input batch");
    if (scratch > cache->pending)
      throw Error("forward: the mask refers to more scratch rows than are pending");
    if (prefix + scratch + q > cache->capacity()) {
      throw Error("forward: block of " + std::to_string(q) + " tokens does not fit the KV cache (" +
                  std::to_string(cache->capacity() - prefix - scratch) + " rows free)");
    }
  } else if (scratch > 0) {
    throw Error("forward: scratch rows need a cache");
  }
  return prefix + scratch;
}

BlockPlan plan_block(const Rope2d& rope, KvCache* cache, int64_t B, const at::Tensor& pos_in,
                     const at::Tensor& block_mask, const at::Tensor& block_key_valid,
                     PositionBounds bounds) {
  const int64_t q = pos_in.numel();
  const auto device = rope.cis().device();
  BlockPlan plan;
  plan.start = checked_block_start(rope, cache, B, pos_in, block_mask, bounds);
  plan.cis = rope.cis().index_select(0, to_device_async(pos_in, device));
  const int64_t prefix = cache ? cache->len : 0, scratch = plan.start - prefix;

  // Additive bias [B, 1, q, prefix + scratch + q]: committed keys keep their own bias (padding),
  // scratch and block keys follow block_mask (default causal) and their key validity; a query
  // always sees itself.
  auto fopts = at::TensorOptions().device(device).dtype(at::kFloat);
  if (q == 1 && !block_key_valid.defined() && !block_mask.defined() && cache) {
    cache->key_bias.narrow(1, prefix, 1).zero_();
    plan.bias = cache->key_bias.narrow(1, 0, prefix + 1).view({B, 1, 1, prefix + 1});
    return plan;
  }
  at::Tensor visible = block_mask.defined() ? to_device_async(block_mask, device).to(at::kBool)
                                            : at::ones({q, q}, fopts.dtype(at::kBool)).tril();
  auto mask_bias = at::zeros({q, scratch + q}, fopts).masked_fill(visible.logical_not(), kNegInf);
  at::Tensor key_row = at::zeros({B, q}, fopts);
  if (block_key_valid.defined()) {
    key_row = key_row.masked_fill(block_key_valid.to(device, at::kBool).logical_not(), kNegInf);
  }
  at::Tensor key_cols = key_row;  // validity of the scratch + block keys [B, scratch + q]
  if (cache) {
    cache->key_bias.narrow(1, plan.start, q).copy_(key_row);
    key_cols = cache->key_bias.narrow(1, prefix, scratch + q);
  }
  auto blk = (mask_bias.unsqueeze(0) + key_cols.unsqueeze(1)).contiguous();  // [B, q, s + q]
  blk.narrow(2, scratch, q).diagonal(0, 1, 2).zero_();
  if (cache && prefix > 0) {
    auto past = cache->key_bias.narrow(1, 0, prefix).unsqueeze(1).expand({B, q, prefix});
    plan.bias = at::cat({past, blk}, -1).unsqueeze(1);
  } else {
    plan.bias = blk.unsqueeze(1);
  }
  return plan;
}

at::Tensor run_layer(const DecoderLayer& L, int64_t n_head, double norm_eps, const at::Tensor& x,
                     const BlockPlan& plan, KvCache* cache, int64_t layer, bool inference) {
  auto lin = [inference](const at::Tensor& a, const at::Tensor& w) {
    return inference ? inference_linear(a, w) : at::linear(a, w);
  };
  const int64_t B = x.size(0), q = x.size(1), H = n_head, hd = x.size(2) / n_head;
  // Attention. The draft head's layer has no input norm (SPEC_DECODING.md 2).
  auto xn = L.attn_norm.defined() ? rms_norm(x, L.attn_norm, norm_eps) : x;
  auto qkv = lin(xn, L.wqkv).view({B, q, 3, H, hd});  // rows q | k | v, head-major
  // 2-D RoPE on q and k together: adjacent pairs as complex numbers times cos + i sin (fp32).
  auto qk = qkv.narrow(2, 0, 2).to(at::kFloat).reshape({B, q, 2, H, hd / 2, 2});
  auto rot = at::view_as_real(at::view_as_complex(qk) * plan.cis.view({1, q, 1, 1, hd / 2}))
                 .reshape({B, q, 2, H, hd})
                 .to(x.scalar_type());
  auto xq = rot.select(2, 0).transpose(1, 2);  // [B, H, q, hd]
  auto xk = rot.select(2, 1).transpose(1, 2);
  auto xv = qkv.select(2, 2).transpose(1, 2);
  at::Tensor keys = xk, values = xv;
  if (cache && plan.rows.defined()) {  // fixed shapes: rows from the device, the whole cache
    auto& K = cache->k[size_t(layer)];
    auto& V = cache->v[size_t(layer)];
    K.index_copy_(2, plan.rows, xk.to(K.scalar_type()));  // an fp32 cache: see below
    V.index_copy_(2, plan.rows, xv.to(V.scalar_type()));
    keys = K;
    values = V;
  } else if (cache) {
    auto& K = cache->k[size_t(layer)];
    auto& V = cache->v[size_t(layer)];
    K.narrow(2, plan.start, q).copy_(xk);
    V.narrow(2, plan.start, q).copy_(xv);
    keys = K.narrow(2, 0, plan.start + q);
    values = V.narrow(2, 0, plan.start + q);
  }
  if (keys.scalar_type() != xq.scalar_type()) {
    // A bf16 model's cache made for the lean path holds fp32 rows (Gpt::cache_dtype): values
    // that were rounded to bf16 when written here, so the cast back is exact.
    keys = keys.to(xq.scalar_type());
    values = values.to(xq.scalar_type());
  }
  auto scores = at::matmul(xq, keys.transpose(2, 3));
  if (!L.q_prescaled) scores = scores * (1.0 / std::sqrt(double(hd)));
  // Softmax in fp32 whatever the weights' dtype.
  auto probs = at::softmax(scores.scalar_type() == at::kFloat && inference
                               ? scores.add_(plan.bias)
                               : scores.to(at::kFloat) + plan.bias,
                           -1);
  if (probs.scalar_type() != x.scalar_type()) probs = probs.to(x.scalar_type());
  auto att = at::matmul(probs, values).transpose(1, 2).reshape({B, q, H * hd});
  auto h = x + lin(att, L.wo);
  // SwiGLU feed-forward.
  auto hn = rms_norm(h, L.ffn_norm, norm_eps);
  if (!L.w13.defined()) return h + swiglu(hn, L.w1, L.w2, L.w3);
  auto g = lin(hn, L.w13).chunk(2, -1);
  return h + lin(at::silu(g[0]) * g[1], L.w2);
}

}  // namespace adtree::model
