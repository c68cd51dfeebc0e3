// The T5 v1.1 / FLAN-T5 text encoder that LlamaGen's text-to-image models are conditioned on
// (docs/design/LLAMAGEN.md, "Captions"), read top to bottom in t5_encoder.cpp: token embeddings
// (not scaled), then per block an RMS-normed self-attention with a relative position bias and an
// RMS-normed gated-GELU feed-forward, each added to the residual stream, then a final RMS norm.
// T5's own choices, each of which a plausible port gets wrong: no biases anywhere; the RMS norm
// does not subtract the mean; attention scores are NOT divided by sqrt(d_kv) (T5 folds that into
// its initialisation); the position bias is a learned table over log-spaced buckets of the
// signed query-key distance, held by the first block and added in every block; the feed-forward
// gate is GELU's tanh approximation ("gelu_new"). Any size from the configuration.
#pragma once
#include <ATen/ATen.h>

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "model/params.h"

namespace adtree::model {

struct T5Config {
  int64_t vocab_size = 32128, d_model = 2048, d_kv = 64, d_ff = 5120;
  int64_t num_layers = 24, num_heads = 32;
  int64_t num_buckets = 32, max_distance = 128;  // relative_attention_num_buckets / _max_distance
  double eps = 1e-6;                             // layer_norm_epsilon
  int64_t pad_id = 0, eos_id = 1;

  int64_t inner() const { return num_heads * d_kv; }
  // From a Hugging Face config.json. Only T5 v1.1's gated-GELU encoder is accepted (FLAN-T5,
  // LlamaGen's flan-t5-xl); the original T5's ReLU feed-forward is a clear error. `what` names the
  // file in messages.
  static T5Config from_hf_json(const nlohmann::json& j, const std::string& what);
  nlohmann::json to_hf_json() const;
  void validate(const std::string& what) const;
};

// The encoder's tensors under their Hugging Face names ("encoder.block.0.layer.0.SelfAttention.q
// .weight", ...; the embedding as "shared.weight").
std::vector<ParamSpec> t5_encoder_param_specs(const T5Config& c);

// T5's bucket of a key at `relative` = key position - query position (bidirectional): half the
// buckets for keys after the query; within each half, distances below a quarter of the buckets
// exactly, larger ones log-spaced up to max_distance, beyond it the last bucket.
int64_t t5_relative_bucket(int64_t relative, int64_t num_buckets, int64_t max_distance);

class T5Encoder {
 public:
  // Encoder weights under t5_encoder_param_specs' names (others are ignored by the loader, not
  // here: require_params lists them). Matrices are cast to `dtype` (fp32 or bf16 on the CPU; fp16
  // too on CUDA); norms, the position bias, softmax and the residual stream stay fp32.
  T5Encoder(T5Config cfg, const TensorMap& weights, at::Device device = at::kCPU,
            at::ScalarType dtype = at::kFloat);

  const T5Config& config() const { return cfg_; }
  at::Device device() const { return device_; }
  at::ScalarType dtype() const { return dtype_; }

  // ids [B, L] int64 and mask [B, L] (1 = a real token, 0 = padding, which no query attends to)
  // -> the last hidden state [B, L, d_model] fp32 on the CPU. Padded positions get the values the
  // math gives them (their queries still attend to the real keys), as Hugging Face's do.
  at::Tensor encode(const at::Tensor& ids, const at::Tensor& mask) const;

 private:
  struct Block {
    at::Tensor attn_norm, q, k, v, o, ffn_norm, wi0, wi1, wo;
  };
  at::Tensor position_bias(int64_t L) const;  // [1, H, L, L] fp32
  at::Tensor attention(const Block& b, const at::Tensor& h, const at::Tensor& bias) const;
  at::Tensor feed_forward(const Block& b, const at::Tensor& h) const;
  at::Tensor linear(const at::Tensor& x, const at::Tensor& w) const;
  at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& w) const;

  T5Config cfg_;
  at::Device device_;
  at::ScalarType dtype_;
  at::Tensor embed_, rel_bias_, final_norm_;
  std::vector<Block> blocks_;
};

}  // namespace adtree::model
