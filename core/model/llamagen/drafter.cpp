#include "model/llamagen/drafter.h"

#include <c10/core/InferenceMode.h>

#include <cstring>

#include "model/cpu/pack_cache.h"
#include "model/cpu/small_gemm.h"
#include "model/llamagen/lean_layer.h"
#include "util/error.h"

namespace adtree::model {

std::vector<ParamSpec> drafter_param_specs(const GptConfig& c) {
  const int64_t hid = c.ffn_hidden();
  return {
      {"fc.weight", {c.dim, 2 * c.dim}},
      {"fc.bias", {c.dim}, Init::Zeros},
      {"layers.0.attention.wqkv.weight", {3 * c.dim, c.dim}},
      {"layers.0.attention.wo.weight", {c.dim, c.dim}},
      {"layers.0.feed_forward.w1.weight", {hid, c.dim}},
      {"layers.0.feed_forward.w2.weight", {c.dim, hid}},
      {"layers.0.feed_forward.w3.weight", {hid, c.dim}},
      {"layers.0.ffn_norm.weight", {c.dim}, Init::Ones},
  };
}

Drafter::Drafter(const Gpt& target, const TensorMap& weights, bool inference, double norm_eps,
                 PackCache* packs)
    : target_(target),
      inference_(inference),
      norm_eps_(norm_eps < 0 ? target.config().norm_eps : norm_eps) {
  const auto& cfg = target.config();
  require_params(drafter_param_specs(cfg), weights, "drafter weights");
  for (const auto& [name, t] : weights) w_.emplace(name, t.to(target.device(), target.dtype()));
  fc_w_ = w_.at("fc.weight");
  fc_b_ = w_.at("fc.bias");
  layer_ = make_layer(w_, "layers.0.", cfg.dim, cfg.head_dim(), inference_, packs, "drafter.");
  if (inference_) {
    fc_packed_ = pack_with(packs, "drafter.fc", {fc_w_});
    fc_b32_ = fc_b_.to(at::kFloat).contiguous();
  }
}

int64_t Drafter::num_params() const {
  int64_t n = 0;
  for (const auto& [k, t] : w_) n += t.numel();
  return n;
}

KvCache Drafter::new_cache(int64_t batch, int64_t scratch) const {
  c10::InferenceMode guard(inference_);
  const auto& cfg = target_.config();
  KvCache c;
  const int64_t cap = cfg.image_tokens() + scratch;
  auto opts = at::TensorOptions()
                  .device(target_.device())
                  .dtype(inference_ ? target_.cache_dtype() : target_.dtype());
  c.k.push_back(at::zeros({batch, cfg.n_head, cap, cfg.head_dim()}, opts));
  c.v.push_back(at::zeros({batch, cfg.n_head, cap, cfg.head_dim()}, opts));
  c.key_bias = at::zeros({batch, cap}, opts.dtype(at::kFloat));
  return c;
}

at::Tensor Drafter::lean_input(const at::Tensor& tokens, const at::Tensor& feats) const {
  // [embed(t) | f] per row written straight into one buffer (the reference path's embedding
  // lookup, cast and concatenation are four operations and three allocations).
  const int64_t B = feats.size(0), q = feats.size(1), dim = feats.size(2);
  const auto ids = tokens.to(at::kCPU, at::kLong).contiguous();
  const auto& table = target_.weights().at("tok_embeddings.weight");
  const int64_t vocab = table.size(0);
  auto x = at::empty({B, q, 2 * dim}, feats.options());
  const int64_t* id = ids.data_ptr<int64_t>();
  const bool bf16 = table.scalar_type() == at::kBFloat16;  // a bf16 model: widened exactly
  const float* emb = bf16 ? nullptr : table.data_ptr<float>();
  const at::BFloat16* emb16 = bf16 ? table.data_ptr<at::BFloat16>() : nullptr;
  const float* f = feats.data_ptr<float>();
  float* out = x.data_ptr<float>();
  for (int64_t r = 0; r < B * q; ++r) {
    if (id[r] < 0 || id[r] >= vocab) throw Error("drafter forward: token id out of range");
    float* row = out + r * 2 * dim;
    if (bf16) {
      for (int64_t i = 0; i < dim; ++i) row[i] = float(emb16[id[r] * dim + i]);
    } else {
      std::memcpy(row, emb + id[r] * dim, sizeof(float) * size_t(dim));
    }
    std::memcpy(row + dim, f + r * dim, sizeof(float) * size_t(dim));
  }
  return x;
}

Drafter::Output Drafter::forward(KvCache* cache, const at::Tensor& feats, const at::Tensor& tokens,
                                 const at::Tensor& pos, const at::Tensor& block_mask) const {
  c10::InferenceMode guard(inference_);
  const auto& cfg = target_.config();
  const int64_t B = feats.size(0), q = feats.size(1);
  if (tokens.size(0) != B || tokens.size(1) != q || pos.numel() != q) {
    throw Error("drafter forward: features, tokens and positions must agree");
  }
  // The lean path when inferring on an fp32 or bf16 CPU model (a draft level is a few rows; the
  // target's lean path hands over fp32 features), the small-row kernel or BLAS otherwise;
  // autograd's ops when training.
  // Features in the weights' dtype (a bf16 caller's) widen exactly to the lean path's fp32.
  const bool widen =
      inference_ && fc_packed_.defined() && feats.scalar_type() == at::kBFloat16 && lean_enabled();
  const auto f = widen        ? feats.to(at::kFloat).contiguous()
                 : inference_ ? feats.contiguous()
                              : feats;
  const bool lean = inference_ && fc_packed_.defined() && target_.packed_output().defined() &&
                    lean_applies(layer_, f, cache);
  at::Tensor x, h;
  int64_t start = 0;
  if (lean) {
    const auto plan = lean_plan(target_.rope(), cache, B, pos, block_mask, {});
    start = plan.start;
    x = lean_input(tokens, f);
    h = packed_linear(x, fc_packed_, fc_b32_);
    lean_run_layer(layer_, cfg.n_head, norm_eps_, h, plan, cache, 0);  // h is fresh: in place
  } else {
    const auto plan = plan_block(target_.rope(), cache, B, pos, block_mask, {});
    start = plan.start;
    x = at::cat({target_.embed_tokens(tokens.to(target_.device())),
                 feats.to(target_.device(), target_.dtype())},
                -1);
    h = inference_ ? inference_linear(x.contiguous(), fc_w_, fc_b_) : at::linear(x, fc_w_, fc_b_);
    h = run_layer(layer_, cfg.n_head, norm_eps_, h, plan, cache, 0, inference_);
  }
  if (cache) cache->pending = start - cache->len + q;
  Output out;
  out.hidden = h;
  const auto& head = target_.weights().at("output.weight");
  if (lean) {
    out.logits = packed_linear(h, target_.packed_output());
  } else {
    out.logits =
        (inference_ ? inference_linear(h.contiguous(), head) : at::linear(h, head)).to(at::kFloat);
  }
  return out;
}

}  // namespace adtree::model
