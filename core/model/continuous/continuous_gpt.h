// The continuous family's transformer (issue "CSpD", part 2): MAR's causal raster-order variant
// (LTH14/mar issue 34: one decoder with a causal mask, teacher forcing) on LlamaGen's transformer.
// A token is a vector x [D] (the KL VAE's, model/continuous/kl_vae.h); read top to bottom:
//   e_i = token_proj(x_i)                                  [dim]
//   h = Gpt.forward([condition embeddings, e_0 .. e_{i-1}]) the LlamaGen transformer, KV-cached
//   z_i = h at the position before token i                 the diffusion head's condition
//   x_i ~ DiffusionHead(z_i)                               K reverse steps (head_sampler.h)
// The backbone's vocabulary table and output head are unused (vocab_size 2): the Gpt keeps them
// so the whole transformer (lean CPU path, KV cache, caption conditioning) is the same code.
#pragma once
#include <ATen/ATen.h>
#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <vector>

#include "model/continuous/diffusion_head.h"
#include "model/continuous/diffusion_schedule.h"
#include "model/llamagen/gpt.h"

namespace adtree::model {

struct ContinuousConfig {
  GptConfig backbone;        // vocab_size 2; grid and caption settings as the discrete GPT's
  DiffusionHeadConfig head;  // token_dim = D, cond_dim = backbone.dim
  int train_steps = 1000;    // the head's diffusion schedule
  int sample_steps = 25;     // respaced reverse steps when sampling
  double x0_bound = 0;       // sampling clamps x0 predictions to +-x0_bound (0: none); see
                             // DiffusionSchedule; the trainer sets the tokens' largest |number|

  int64_t token_dim() const { return head.token_dim; }
  void validate() const;  // throws adtree::Error naming the bad field
  nlohmann::json to_json() const;
  static ContinuousConfig from_json(const nlohmann::json& j);
};

// "backbone.*" (the Gpt's names), "token_proj.{weight,bias}", "head.*" (the head's names).
std::vector<ParamSpec> continuous_param_specs(const ContinuousConfig& cfg);

class ContinuousGpt {
 public:
  // As Gpt: weights moved to `device`/`dtype`; `inference` false keeps the given tensors
  // (training).
  ContinuousGpt(ContinuousConfig cfg, const TensorMap& weights, at::Device device = at::kCPU,
                at::ScalarType dtype = at::kFloat, bool inference = true);

  const ContinuousConfig& config() const { return cfg_; }
  const Gpt& backbone() const { return *gpt_; }
  const DiffusionHead& head() const { return *head_; }
  const DiffusionSchedule& schedule() const { return schedule_; }
  // The schedule with another number of sampling steps and the variance a run asks for.
  DiffusionSchedule schedule_with(int sample_steps, bool fixed_variance = false) const;

  // Tokens [B, q, D] -> input embeddings [B, q, dim] on the model's device.
  at::Tensor embed(const at::Tensor& tokens) const;
  // Runs the condition into an empty cache, commits it, and returns z_0 [B, dim].
  at::Tensor prefill(KvCache& cache, const Condition& cond) const;
  // Tokens [B, q, D] at image indices first .. first+q-1 appended to the cache (pending); returns
  // [B, q, dim]: row j is z_{first+j+1}, the condition of the token after it.
  at::Tensor forward_tokens(KvCache& cache, const at::Tensor& tokens, int64_t first_index) const;

 private:
  ContinuousConfig cfg_;
  std::unique_ptr<Gpt> gpt_;
  std::unique_ptr<DiffusionHead> head_;
  DiffusionSchedule schedule_;
  at::Tensor proj_w_, proj_b_;
};

// The sub-map of `w` whose names start with `prefix` (the prefix stripped); tensors shared.
TensorMap sub_map(const TensorMap& w, const std::string& prefix);

}  // namespace adtree::model
