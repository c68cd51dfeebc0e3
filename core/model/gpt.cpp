#include "model/gpt.h"

#include <c10/core/InferenceMode.h>

#include <cmath>
#include <limits>

#include "io/mapped_pages.h"
#include "model/lean_kernels.h"
#include "model/lean_layer.h"
#include "model/pack_cache.h"
#include "model/small_gemm.h"
#include "util/device_sync.h"
#include "util/error.h"

namespace adtree::model {

namespace {
std::string layer_name(int64_t i, const std::string& rest) {
  return "layers." + std::to_string(i) + "." + rest;
}
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// x [..., in] @ w^T for inference: the small-row kernel for decoding steps, BLAS otherwise.
at::Tensor fast_linear(const at::Tensor& x, const at::Tensor& w) {
  return inference_linear(x, w);
}
}  // namespace

std::vector<ParamSpec> gpt_param_specs(const GptConfig& c) {
  std::vector<ParamSpec> s;
  if (c.cond == CondKind::Class) {
    s.push_back({"cls_embedding.embedding_table.weight", {c.num_classes + 1, c.dim}});
  } else {
    s.push_back({"cls_embedding.cap_proj.fc1.weight", {c.dim, c.cap_dim}});
    s.push_back({"cls_embedding.cap_proj.fc2.weight", {c.dim, c.dim}});
    s.push_back({"cls_embedding.uncond_embedding",
                 {c.cond_len, c.cap_dim},
                 Init::Normal,
                 1.0 / std::sqrt(double(c.cap_dim))});
    if (c.num_words > 0) {
      s.push_back(
          {"cls_embedding.word_embeddings.weight", {c.num_words, c.cap_dim}, Init::Normal, 1.0});
    }
  }
  s.push_back({"tok_embeddings.weight", {c.vocab_size, c.dim}});
  const int64_t hid = c.ffn_hidden();
  for (int64_t i = 0; i < c.n_layer; ++i) {
    s.push_back({layer_name(i, "attention.wqkv.weight"), {3 * c.dim, c.dim}});
    s.push_back({layer_name(i, "attention.wo.weight"), {c.dim, c.dim}});
    s.push_back({layer_name(i, "feed_forward.w1.weight"), {hid, c.dim}});
    s.push_back({layer_name(i, "feed_forward.w2.weight"), {c.dim, hid}});
    s.push_back({layer_name(i, "feed_forward.w3.weight"), {hid, c.dim}});
    s.push_back({layer_name(i, "attention_norm.weight"), {c.dim}, Init::Ones});
    s.push_back({layer_name(i, "ffn_norm.weight"), {c.dim}, Init::Ones});
  }
  s.push_back({"norm.weight", {c.dim}, Init::Ones});
  s.push_back({"output.weight", {c.vocab_size, c.dim}});
  return s;
}

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

int64_t Condition::batch() const {
  if (class_ids.defined()) return class_ids.size(0);
  if (caption.defined()) return caption.size(0);
  return 0;
}

Gpt::Gpt(GptConfig cfg, const TensorMap& weights, at::Device device, at::ScalarType dtype,
         bool inference, PackCache* packs)
    : cfg_(std::move(cfg)),
      device_(device),
      dtype_(dtype),
      inference_(inference),
      rope_(Rope2d(cfg_.head_dim(), cfg_.cond_tokens(), cfg_.grid_h, cfg_.rope_base).to(device)) {
  cfg_.validate();
  require_params(gpt_param_specs(cfg_), weights, "GPT weights");
  for (const auto& [name, t] : weights) {
    // A converted copy (a bf16 model from an fp32 file) comes from the cache when there is one.
    const auto convert = [&](const at::Tensor& x) { return x.to(device_, dtype_); };
    const bool copy = t.scalar_type() != dtype_ && device_.is_cpu();
    const at::Tensor& stored =
        w_.emplace(name,
                   packs && copy ? packs->converted("weights." + name, t, convert) : convert(t))
            .first->second;
    // A converted copy (bf16 from an fp32 file, or on a GPU): the file's pages are read no more.
    if (!stored.is_same(t)) io::release_mapped_pages(t);
  }
  for (int64_t i = 0; i < cfg_.n_layer; ++i) {
    layers_.push_back(
        make_layer(w_, layer_name(i, ""), cfg_.dim, cfg_.head_dim(), inference_, packs));
  }
  tok_emb_ = w_.at("tok_embeddings.weight");
  norm_ = w_.at("norm.weight");
  output_ = w_.at("output.weight");
  if (inference_) {
    output_packed_ = pack_with(packs, "output", {output_});
    norm32_ = norm_.to(at::kFloat).contiguous();
  }
}

bool Gpt::lean_ready() const {
  return inference_ && output_packed_.defined() && lean_enabled();
}

at::ScalarType Gpt::cache_dtype() const {
  return lean_ready() ? at::kFloat : dtype_;
}

KvCache Gpt::new_cache(int64_t batch, int64_t extra) const {
  c10::InferenceMode guard(inference_);
  KvCache c;
  const int64_t cap = cfg_.seq_len() + extra;
  auto opts = at::TensorOptions().device(device_).dtype(cache_dtype());
  for (int64_t l = 0; l < cfg_.n_layer; ++l) {
    c.k.push_back(at::zeros({batch, cfg_.n_head, cap, cfg_.head_dim()}, opts));
    c.v.push_back(at::zeros({batch, cfg_.n_head, cap, cfg_.head_dim()}, opts));
  }
  c.key_bias = at::zeros({batch, cap}, opts.dtype(at::kFloat));
  return c;
}

at::Tensor Gpt::embed_tokens(const at::Tensor& tokens) const {
  // Token ids built on the host (draft sources, PJD) go to the table's device: a CUDA
  // index_select does not take a host index.
  const auto ids = to_device_async(tokens, tok_emb_.device()).reshape(-1);
  return tok_emb_.index_select(0, ids).view({tokens.size(0), tokens.size(1), -1});
}

at::Tensor Gpt::caption_from_words(const at::Tensor& word_ids) const {
  if (cfg_.cond != CondKind::Caption || cfg_.num_words == 0) {
    throw Error("this model has no word-embedding table (it is not a t2i-words model)");
  }
  const auto& table = w_.at("cls_embedding.word_embeddings.weight");
  auto ids = word_ids.to(device_);
  if (ids.numel() > 0 && ids.max().item<int64_t>() >= cfg_.num_words) {
    throw Error("word id out of range of the model's word table");
  }
  auto valid = ids.ge(0);
  auto vecs = table.index_select(0, ids.clamp_min(0).reshape(-1))
                  .view({ids.size(0), ids.size(1), cfg_.cap_dim});
  return vecs * valid.unsqueeze(-1).to(vecs.scalar_type());  // padded slots are zero vectors
}

at::Tensor Gpt::null_caption() const {
  if (cfg_.cond != CondKind::Caption) throw Error("a class-conditional model has no null caption");
  return w_.at("cls_embedding.uncond_embedding");
}

at::Tensor Gpt::embed_condition(const Condition& cond) const {
  if (cfg_.cond == CondKind::Class) {
    if (!cond.class_ids.defined()) throw Error("this model is class-conditional: give a class");
    auto ids = cond.class_ids.to(device_);
    if (ids.min().item<int64_t>() < 0 || ids.max().item<int64_t>() > cfg_.num_classes) {
      throw Error("class id out of range (0 .. " + std::to_string(cfg_.num_classes) + ")");
    }
    return w_.at("cls_embedding.embedding_table.weight").index_select(0, ids).unsqueeze(1);
  }
  if (!cond.caption.defined()) throw Error("this model is caption-conditional: give a caption");
  auto e = cond.caption.to(device_, dtype_);
  if (e.dim() != 3 || e.size(1) != cfg_.cond_len || e.size(2) != cfg_.cap_dim) {
    throw Error("caption must be [B, " + std::to_string(cfg_.cond_len) + ", " +
                std::to_string(cfg_.cap_dim) + "], got " + shape_str(e.sizes()));
  }
  const auto& fc1 = w_.at("cls_embedding.cap_proj.fc1.weight");
  const auto& fc2 = w_.at("cls_embedding.cap_proj.fc2.weight");
  return at::linear(at::gelu(at::linear(e, fc1), "tanh"), fc2);
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
    return inference ? fast_linear(a, w) : at::linear(a, w);
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

Gpt::Output Gpt::forward(const at::Tensor& x_in, const at::Tensor& pos, KvCache* cache,
                         const at::Tensor& block_mask, const at::Tensor& block_key_valid,
                         int64_t logits_last, PositionBounds bounds) const {
  c10::InferenceMode guard(inference_);
  const int64_t B = x_in.size(0), q = x_in.size(1);
  if (pos.numel() != q) throw Error("forward: need one position per block token");
  // The lean path's hidden states are fp32 whatever the weights' dtype.
  const bool lean = lean_ready();
  auto h = x_in.to(device_, lean ? at::kFloat : dtype_);
  Output out;
  int64_t start = 0;
  if (lean && lean_applies(layers_.front(), h.contiguous(), cache)) {
    const auto plan = lean_plan(rope_, cache, B, pos, block_mask, block_key_valid, bounds);
    start = plan.start;
    // One copy of the input, then every layer in place (the caller keeps x_in).
    h = h.clone(at::MemoryFormat::Contiguous);
    for (int64_t l = 0; l < cfg_.n_layer; ++l) {
      lean_run_layer(layers_[size_t(l)], cfg_.n_head, cfg_.norm_eps, h, plan, cache, l);
    }
    out.hidden = at::empty_like(h);
    lean_rms_norm(h.data_ptr<float>(), norm32_.data_ptr<float>(), B * q, cfg_.dim, cfg_.norm_eps,
                  out.hidden.data_ptr<float>());
  } else {
    h = h.to(dtype_);  // a cache of another dtype than the lean path's: the reference path
    const auto plan = plan_block(rope_, cache, B, pos, block_mask, block_key_valid, bounds);
    start = plan.start;
    for (int64_t l = 0; l < cfg_.n_layer; ++l) {
      h = run_layer(layers_[size_t(l)], cfg_.n_head, cfg_.norm_eps, h, plan, cache, l, inference_);
    }
    out.hidden = rms_norm(h, norm_, cfg_.norm_eps);
  }
  if (cache) cache->pending = start - cache->len + q;
  auto head_in = logits_last > 0 && logits_last < q
                     ? out.hidden.narrow(1, q - logits_last, logits_last)
                     : out.hidden;
  if (lean) {
    out.logits = packed_linear(head_in.to(at::kFloat).contiguous(), output_packed_);
  } else {
    out.logits =
        (inference_ ? fast_linear(head_in.contiguous(), output_) : at::linear(head_in, output_))
            .to(at::kFloat);
  }
  return out;
}

Gpt::Output Gpt::prefill(KvCache& cache, const Condition& cond) const {
  c10::InferenceMode guard(inference_);
  cache.truncate(0);
  auto x = embed_condition(cond);
  const int64_t C = cfg_.cond_tokens();
  auto pos = at::arange(C, at::TensorOptions().dtype(at::kLong));
  at::Tensor valid = cfg_.cond == CondKind::Caption && cond.caption_mask.defined()
                         ? cond.caption_mask
                         : at::Tensor();
  auto out = forward(x, pos, &cache, {}, valid, 1);
  cache.commit();
  return out;
}

Gpt::Output Gpt::forward_tokens(KvCache& cache, const at::Tensor& tokens,
                                int64_t first_index) const {
  c10::InferenceMode guard(inference_);
  auto pos = at::arange(cfg_.cond_tokens() + first_index,
                        cfg_.cond_tokens() + first_index + tokens.size(1),
                        at::TensorOptions().dtype(at::kLong));
  return forward(embed_tokens(tokens.to(device_)), pos, &cache);
}

int64_t Gpt::packed_bytes() const {
  auto bytes = [](const PackedWeight& w) { return w.defined() ? int64_t(w.panels.nbytes()) : 0; };
  int64_t n = bytes(output_packed_);
  for (const auto& L : layers_)
    n += bytes(L.p_wqkv) + bytes(L.p_wo) + bytes(L.p_w13) + bytes(L.p_w2);
  return n;
}

int64_t Gpt::num_params() const {
  int64_t n = 0;
  for (const auto& [name, t] : w_) n += t.numel();
  return n;
}

}  // namespace adtree::model
