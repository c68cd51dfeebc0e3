#include "model/llamagen/parallel_head.h"

#include <c10/core/InferenceMode.h>

#include "model/cpu/pack_cache.h"
#include "model/cpu/packed_gemm.h"
#include "model/llamagen/decoder_layer.h"
#include "util/error.h"

namespace adtree::model {

std::vector<ParamSpec> parallel_head_param_specs(const GptConfig& c, int64_t depths) {
  return {
      {"in.weight", {c.dim, 3 * c.dim}},
      {"in.bias", {c.dim}, Init::Zeros},
      {"depth", {depths, c.dim}},
      {"mlp.w1.weight", {c.dim, c.dim}},
      {"mlp.w2.weight", {c.dim, c.dim}, Init::Zeros},  // h_j = x_j at the start
      {"norm.weight", {c.dim}, Init::Ones},
  };
}

ParallelHead::ParallelHead(const Gpt& target, const TensorMap& weights, int64_t depths,
                           bool inference, PackCache* packs)
    : target_(target), depths_(depths), inference_(inference) {
  if (depths < 1 || depths > 64) throw Error("a parallel head's depths must be in 1..64");
  require_params(parallel_head_param_specs(target.config(), depths), weights,
                 "parallel head weights");
  for (const auto& [name, t] : weights) w_.emplace(name, t.to(target.device(), target.dtype()));
  // The lean path: where the target packs its output head (fp32 or bf16 CPU inference).
  if (inference_ && target.packed_output().defined()) {
    in_packed_ = pack_with(packs, "parallel.in", {w_.at("in.weight")});
    w1_packed_ = pack_with(packs, "parallel.w1", {w_.at("mlp.w1.weight")});
    w2_packed_ = pack_with(packs, "parallel.w2", {w_.at("mlp.w2.weight")});
  }
}

int64_t ParallelHead::num_params() const {
  int64_t n = 0;
  for (const auto& [k, t] : w_) n += t.numel();
  return n;
}

at::Tensor ParallelHead::linear(const at::Tensor& x, const at::Tensor& w,
                                const PackedWeight& p) const {
  if (p.defined()) return packed_linear(x.to(at::kFloat).contiguous(), p);
  return at::linear(x.to(w.scalar_type()), w).to(at::kFloat);
}

// [R, K, 3 D]: the root's token embedding and feature beside each depth's code above.
at::Tensor ParallelHead::input(const at::Tensor& feats, const at::Tensor& tokens,
                               const at::Tensor& above) const {
  const int64_t R = tokens.size(0), K = depths_;
  if (feats.dim() != 2 || feats.size(0) != R || above.dim() != 2 || above.size(0) != R ||
      above.size(1) != K) {
    throw Error("parallel head: expected feats [R, D], tokens [R] and above [R, " +
                std::to_string(K) + "]");
  }
  const auto dev = target_.device();
  auto root = at::cat({target_.embed_tokens(tokens.view({R, 1})).to(at::kFloat).view({R, -1}),
                       feats.to(dev, at::kFloat)},
                      1);
  auto known = above.ge(0).to(dev);
  auto up =
      target_.embed_tokens(above.clamp_min(0)).to(at::kFloat) * known.unsqueeze(-1).to(at::kFloat);
  return at::cat({root.unsqueeze(1).expand({R, K, root.size(1)}), up}, 2);
}

at::Tensor ParallelHead::forward(const at::Tensor& feats, const at::Tensor& tokens,
                                 const at::Tensor& above) const {
  c10::InferenceMode guard(inference_);
  const double eps = target_.config().norm_eps;
  const auto& W = w_;
  auto x = linear(input(feats, tokens, above), W.at("in.weight"), in_packed_) +
           (W.at("in.bias") + W.at("depth")).to(at::kFloat);  // [R, K, D] + [K, D]
  auto g =
      linear(x * at::rsqrt(x.mul(x).mean(-1, true).add(eps)), W.at("mlp.w1.weight"), w1_packed_);
  auto h = x + linear(at::silu(g), W.at("mlp.w2.weight"), w2_packed_);
  auto n = rms_norm(h, W.at("norm.weight").to(at::kFloat), eps);
  const auto& out = target_.packed_output();
  if (inference_ && out.defined()) return packed_linear(n.contiguous(), out);
  return at::linear(n.to(target_.dtype()), target_.weights().at("output.weight")).to(at::kFloat);
}

}  // namespace adtree::model
