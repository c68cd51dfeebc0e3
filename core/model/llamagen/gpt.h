// LlamaGen GPT (target transformer), read top to bottom against LLAMAGEN.md: config, RMSNorm,
// 2-D RoPE, attention, feed-forward, block, model. Weights are plain tensors in a TensorMap under
// the reference names; every forward is functional, so the trainer can pass tensors needing grad.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

#include "model/llamagen/decoder_layer.h"
#include "model/llamagen/gpt_config.h"

namespace adtree::model {

std::vector<ParamSpec> gpt_param_specs(const GptConfig& cfg);

// What conditions one batch: class ids (c2i) or caption vectors with their padding mask (t2i).
struct Condition {
  at::Tensor class_ids;     // [B] int64; num_classes = the null class
  at::Tensor caption;       // [B, C, cap_dim]
  at::Tensor caption_mask;  // [B, C] bool, false = padded slot (hidden from every query)
  int64_t batch() const;
};

class Gpt {
 public:
  struct Output {
    at::Tensor logits;  // [B, q', vocab] fp32 (q' = q, or logits_last)
    at::Tensor hidden;  // [B, q, dim] after the final RMSNorm: the draft head's input feature
  };

  // Weights are moved to `device` and cast to `dtype` (norm weights too; RMSNorm math stays fp32).
  // `inference` fuses w1|w3 for speed; the trainer passes false and keeps the given tensors.
  // The lean path's panels come through `packs` when given (the model loader's disk cache).
  Gpt(GptConfig cfg, const TensorMap& weights, at::Device device = at::kCPU,
      at::ScalarType dtype = at::kFloat, bool inference = true, PackCache* packs = nullptr);

  const GptConfig& config() const { return cfg_; }
  const TensorMap& weights() const { return w_; }
  at::Device device() const { return device_; }
  at::ScalarType dtype() const { return dtype_; }
  const Rope2d& rope() const { return rope_; }
  // The output head packed for the lean path (empty unless fp32 or bf16 CPU inference); the draft
  // head shares it.
  const PackedWeight& packed_output() const { return output_packed_; }
  // Whether forward takes the lean CPU path (packed weights and $ADTREE_LEAN not 0). It keeps the
  // hidden states fp32 whatever the weights' dtype.
  bool lean_ready() const;
  // The dtype of new caches: fp32 where the lean path runs (a bf16 model's K/V rows come out of
  // fp32 arithmetic; storing them fp32 costs 2 bytes a value and no rounding, and the attention
  // reads fp32 rows directly), else the weights' dtype.
  at::ScalarType cache_dtype() const;

  // A cache for `batch` sequences holding the condition, the whole image and `extra` rows of
  // scratch for a verification block beyond the last image token.
  KvCache new_cache(int64_t batch, int64_t extra = 64) const;

  // [B, q] token ids (on any device) -> [B, q, dim] on the model's device.
  at::Tensor embed_tokens(const at::Tensor& tokens) const;
  // Condition -> [B, C, dim] condition embeddings (cap_proj for captions).
  at::Tensor embed_condition(const Condition& cond) const;
  // Word ids [B, C] (-1 = padding) -> caption vectors [B, C, cap_dim] (zeros at padding) for
  // models whose word-embedding table feeds cap_proj (num_words > 0).
  at::Tensor caption_from_words(const at::Tensor& word_ids) const;
  // The stored null caption [C, cap_dim] (t2i CFG) or an error for c2i.
  at::Tensor null_caption() const;

  // The transformer on a block of q new inputs x [B, q, dim] at sequence positions pos [q].
  // With a cache: attends to the committed rows (respecting their key bias) and the block itself,
  // writes the block's K/V as pending rows. Without one: attends within the block only.
  // block_mask [q, q] bool (true = may attend) defaults to causal; block_key_valid [B, q] marks
  // padded keys of the block (condition padding). A query always sees itself.
  // A block_mask [q, s + q] keeps the first s pending rows as scratch the block may attend to
  // (draft-tree expansion level by level); the block is written after them.
  // logits_last > 0 computes logits for the last logits_last rows only, < 0 none (hidden only).
  // `bounds`: see PositionBounds (device-built positions).
  Output forward(const at::Tensor& x, const at::Tensor& pos, KvCache* cache,
                 const at::Tensor& block_mask = {}, const at::Tensor& block_key_valid = {},
                 int64_t logits_last = 0, PositionBounds bounds = {}) const;

  // The same transformer on a block whose tensors keep their shapes and storage from call to call
  // (static_forward.h): what a CUDA graph captures.
  Output forward_static(const StaticBlock& block, KvCache& cache) const;

  // Runs the condition prefix into an empty cache and commits it. Returns the output at the last
  // condition position, whose logits predict image token 0.
  Output prefill(KvCache& cache, const Condition& cond) const;

  // Tokens [B, q] at image indices first .. first+q-1, causal, appended to the cache (pending).
  Output forward_tokens(KvCache& cache, const at::Tensor& tokens, int64_t first_index) const;

  // Parameter count of the transformer (all tensors).
  int64_t num_params() const;
  // Bytes of the copies packed for the lean CPU path (0 on other devices and dtypes).
  int64_t packed_bytes() const;

 private:
  GptConfig cfg_;
  TensorMap w_;
  at::Device device_;
  at::ScalarType dtype_;
  bool inference_;
  Rope2d rope_;
  std::vector<DecoderLayer> layers_;
  at::Tensor tok_emb_, norm_, output_;
  at::Tensor norm32_;  // the lean path's final norm weight (fp32)
  PackedWeight output_packed_;
};

}  // namespace adtree::model
