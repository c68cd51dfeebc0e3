#include "model/text/t5_encoder.h"

#include <c10/core/InferenceMode.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/json_int.h"

namespace adtree::model {

namespace {
std::string block_name(int64_t i, const std::string& rest) {
  return "encoder.block." + std::to_string(i) + ".layer." + rest;
}
}  // namespace

// ---- configuration -------------------------------------------------------------------------

T5Config T5Config::from_hf_json(const nlohmann::json& j, const std::string& what) {
  T5Config c;
  try {
    if (!j.is_object()) throw Error("it must be a JSON object");
    c.vocab_size = json_int(j, "vocab_size", c.vocab_size);
    c.d_model = json_int(j, "d_model", c.d_model);
    c.d_kv = json_int(j, "d_kv", c.d_kv);
    c.d_ff = json_int(j, "d_ff", c.d_ff);
    c.num_layers = json_int(j, "num_layers", c.num_layers);
    c.num_heads = json_int(j, "num_heads", c.num_heads);
    c.num_buckets = json_int(j, "relative_attention_num_buckets", c.num_buckets);
    c.max_distance = json_int(j, "relative_attention_max_distance", c.max_distance);
    c.eps = json_field(j, "layer_norm_epsilon", c.eps);
    c.pad_id = json_int(j, "pad_token_id", c.pad_id);
    c.eos_id = json_int(j, "eos_token_id", c.eos_id);
    // T5 v1.1 and FLAN-T5 say "gated-gelu"; the original T5's "relu" has one input matrix.
    const auto proj = json_field(j, "feed_forward_proj", std::string("relu"));
    if (proj != "gated-gelu") {
      throw Error(
          "feed_forward_proj is '" + proj +
          "': only T5 v1.1's 'gated-gelu' encoder (FLAN-T5, as LlamaGen uses) is supported");
    }
  } catch (const Error& e) {
    throw Error(what + ": not a T5 v1.1 configuration: " + e.what());
  }
  c.validate(what);
  return c;
}

nlohmann::json T5Config::to_hf_json() const {
  return {{"model_type", "t5"},
          {"vocab_size", vocab_size},
          {"d_model", d_model},
          {"d_kv", d_kv},
          {"d_ff", d_ff},
          {"num_layers", num_layers},
          {"num_heads", num_heads},
          {"relative_attention_num_buckets", num_buckets},
          {"relative_attention_max_distance", max_distance},
          {"layer_norm_epsilon", eps},
          {"feed_forward_proj", "gated-gelu"},
          {"dense_act_fn", "gelu_new"},
          {"is_gated_act", true},
          {"pad_token_id", pad_id},
          {"eos_token_id", eos_id},
          {"tie_word_embeddings", false}};
}

void T5Config::validate(const std::string& what) const {
  const auto positive = [&](int64_t v, const char* name) {
    if (v <= 0) throw Error(what + ": " + name + " must be positive, got " + std::to_string(v));
  };
  positive(vocab_size, "vocab_size");
  positive(d_model, "d_model");
  positive(d_kv, "d_kv");
  positive(d_ff, "d_ff");
  positive(num_layers, "num_layers");
  positive(num_heads, "num_heads");
  if (num_buckets < 4 || num_buckets % 2 != 0) {
    throw Error(what + ": relative_attention_num_buckets must be even and at least 4");
  }
  if (max_distance <= num_buckets / 4) {
    throw Error(what + ": relative_attention_max_distance must exceed a quarter of the buckets");
  }
  if (!(eps > 0 && eps < 0.1)) throw Error(what + ": layer_norm_epsilon must be in (0, 0.1)");
  if (pad_id < 0 || pad_id >= vocab_size || eos_id < 0 || eos_id >= vocab_size) {
    throw Error(what + ": pad_token_id and eos_token_id must be token ids below vocab_size");
  }
}

std::vector<ParamSpec> t5_encoder_param_specs(const T5Config& c) {
  std::vector<ParamSpec> s{{"shared.weight", {c.vocab_size, c.d_model}, Init::Normal, 1.0}};
  const int64_t inner = c.inner();
  for (int64_t i = 0; i < c.num_layers; ++i) {
    for (const char* m : {"q", "k", "v"})
      s.push_back({block_name(i, "0.SelfAttention.") + m + ".weight", {inner, c.d_model}});
    s.push_back({block_name(i, "0.SelfAttention.o.weight"), {c.d_model, inner}});
    if (i == 0) {
      s.push_back({block_name(0, "0.SelfAttention.relative_attention_bias.weight"),
                   {c.num_buckets, c.num_heads}});
    }
    s.push_back({block_name(i, "0.layer_norm.weight"), {c.d_model}, Init::Ones});
    s.push_back({block_name(i, "1.DenseReluDense.wi_0.weight"), {c.d_ff, c.d_model}});
    s.push_back({block_name(i, "1.DenseReluDense.wi_1.weight"), {c.d_ff, c.d_model}});
    s.push_back({block_name(i, "1.DenseReluDense.wo.weight"), {c.d_model, c.d_ff}});
    s.push_back({block_name(i, "1.layer_norm.weight"), {c.d_model}, Init::Ones});
  }
  s.push_back({"encoder.final_layer_norm.weight", {c.d_model}, Init::Ones});
  return s;
}

int64_t t5_relative_bucket(int64_t relative, int64_t num_buckets, int64_t max_distance) {
  const int64_t half = num_buckets / 2;
  const int64_t base = relative > 0 ? half : 0;  // keys after the query use the upper half
  const int64_t n = relative < 0 ? -relative : relative;
  const int64_t exact = half / 2;
  if (n < exact) return base + n;
  // Log-spaced from `exact` to max_distance over the half's remaining buckets, truncated. In float
  // as T5's reference code computes it (a float32 tensor over a double constant): at distances
  // where the product is a whole number (64 with the usual 32 / 128) double arithmetic can land a
  // hair below it and truncate to the bucket before.
  const float scaled = std::log(float(n) / float(exact)) /
                       float(std::log(double(max_distance) / double(exact))) * float(half - exact);
  return base + std::min(exact + int64_t(scaled), half - 1);
}

// ---- the encoder ---------------------------------------------------------------------------

T5Encoder::T5Encoder(T5Config cfg, const TensorMap& weights, at::Device device,
                     at::ScalarType dtype)
    : cfg_(std::move(cfg)), device_(device), dtype_(dtype) {
  cfg_.validate("T5 configuration");
  require_params(t5_encoder_param_specs(cfg_), weights, "T5 encoder weights");
  const auto matrix = [&](const std::string& n) { return weights.at(n).to(device_, dtype_); };
  const auto fp32 = [&](const std::string& n) { return weights.at(n).to(device_, at::kFloat); };
  embed_ = weights.at("shared.weight").to(device_, dtype_);
  rel_bias_ = fp32(block_name(0, "0.SelfAttention.relative_attention_bias.weight"));
  final_norm_ = fp32("encoder.final_layer_norm.weight");
  for (int64_t i = 0; i < cfg_.num_layers; ++i) {
    const auto attn = [&](const char* m) {
      return matrix(block_name(i, "0.SelfAttention.") + m + ".weight");
    };
    const auto ff = [&](const char* m) {
      return matrix(block_name(i, "1.DenseReluDense.") + m + ".weight");
    };
    blocks_.push_back({fp32(block_name(i, "0.layer_norm.weight")), attn("q"), attn("k"), attn("v"),
                       attn("o"), fp32(block_name(i, "1.layer_norm.weight")), ff("wi_0"),
                       ff("wi_1"), ff("wo")});
  }
}

at::Tensor T5Encoder::linear(const at::Tensor& x, const at::Tensor& w) const {
  return at::linear(x.to(dtype_), w).to(at::kFloat);
}

// T5's layer norm: x / sqrt(mean(x^2) + eps) * w, no mean subtracted, no bias.
at::Tensor T5Encoder::rms_norm(const at::Tensor& x, const at::Tensor& w) const {
  return x * at::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + cfg_.eps) * w;
}

at::Tensor T5Encoder::position_bias(int64_t L) const {
  std::vector<int64_t> buckets(size_t(L * L));
  for (int64_t i = 0; i < L; ++i)
    for (int64_t j = 0; j < L; ++j)
      buckets[size_t(i * L + j)] = t5_relative_bucket(j - i, cfg_.num_buckets, cfg_.max_distance);
  const auto idx = at::tensor(buckets, at::kLong).to(device_);
  // [L * L, H] -> [1, H, L, L]
  return rel_bias_.index_select(0, idx)
      .view({L, L, cfg_.num_heads})
      .permute({2, 0, 1})
      .unsqueeze(0);
}

at::Tensor T5Encoder::attention(const Block& b, const at::Tensor& h, const at::Tensor& bias) const {
  const int64_t B = h.size(0), L = h.size(1), H = cfg_.num_heads, dk = cfg_.d_kv;
  const auto heads = [&](const at::Tensor& w) {
    return linear(h, w).view({B, L, H, dk}).transpose(1, 2);  // [B, H, L, dk]
  };
  const auto q = heads(b.q), k = heads(b.k), v = heads(b.v);
  // No 1/sqrt(d_kv): T5 trained without it.
  const auto scores = at::matmul(q, k.transpose(-1, -2)) + bias;
  const auto out = at::matmul(at::softmax(scores, -1), v).transpose(1, 2).reshape({B, L, H * dk});
  return linear(out, b.o);
}

at::Tensor T5Encoder::feed_forward(const Block& b, const at::Tensor& h) const {
  return linear(at::gelu(linear(h, b.wi0), "tanh") * linear(h, b.wi1), b.wo);
}

at::Tensor T5Encoder::encode(const at::Tensor& ids, const at::Tensor& mask) const {
  c10::InferenceMode guard;
  if (ids.dim() != 2 || mask.sizes() != ids.sizes()) {
    throw Error("T5 encoder: ids and mask must both be [batch, length]");
  }
  const auto tokens = ids.to(device_, at::kLong);
  if (tokens.numel() > 0 &&
      (tokens.min().item<int64_t>() < 0 || tokens.max().item<int64_t>() >= cfg_.vocab_size)) {
    throw Error("T5 encoder: a token id is outside the vocabulary of " +
                std::to_string(cfg_.vocab_size));
  }
  const int64_t B = ids.size(0), L = ids.size(1);
  at::Tensor x =
      embed_.index_select(0, tokens.reshape(-1)).view({B, L, cfg_.d_model}).to(at::kFloat);
  // Padded keys take no attention: the most negative float, as Hugging Face's T5 adds.
  const auto key_mask = (1.0 - mask.to(device_, at::kFloat)).view({B, 1, 1, L}) *
                        std::numeric_limits<float>::lowest();
  const auto bias = position_bias(L) + key_mask;  // [B, H, L, L]
  for (const auto& b : blocks_) {
    x = x + attention(b, rms_norm(x, b.attn_norm), bias);
    x = x + feed_forward(b, rms_norm(x, b.ffn_norm));
  }
  return rms_norm(x, final_norm_).cpu();
}

}  // namespace adtree::model
