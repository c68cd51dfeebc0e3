#include "model/llamagen/gpt.h"

#include <c10/core/InferenceMode.h>

#include <cmath>
#include <limits>

#include "io/mapped_pages.h"
#include "model/cpu/forward_profile.h"
#include "model/cpu/lean_kernels.h"
#include "model/cpu/pack_cache.h"
#include "model/cpu/small_gemm.h"
#include "model/llamagen/lean_layer.h"
#include "util/device_sync.h"
#include "util/error.h"

namespace adtree::model {

namespace {
std::string layer_name(int64_t i, const std::string& rest) {
  return "layers." + std::to_string(i) + "." + rest;
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
    PartTimer t(ForwardPart::Norms);
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
  if (logits_last < 0) return out;  // the hidden states alone (the continuous family's backbone)
  auto head_in = logits_last > 0 && logits_last < q
                     ? out.hidden.narrow(1, q - logits_last, logits_last)
                     : out.hidden;
  if (lean) {
    PartTimer t(ForwardPart::Head);
    out.logits = packed_linear(head_in.to(at::kFloat).contiguous(), output_packed_);
  } else {
    out.logits = (inference_ ? inference_linear(head_in.contiguous(), output_)
                             : at::linear(head_in, output_))
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
