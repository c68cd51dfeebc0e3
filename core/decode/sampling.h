// The one logits processor (SPEC_DECODING.md, notation): p = CFG mix, then temperature, then top-k
// (ties with the k-th value survive), then top-p (the first token always survives), softmax.
// Plain AR and every verification rule read p from here, so "lossless" means the same p.
#pragma once
#include <ATen/ATen.h>
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "util/rng.h"

namespace adtree::decode {

// How the guidance scale runs over the image: Constant s for every token, or Linear in the
// fraction generated, s_i = 1 + (s - 1) i / N for image token i of N (MAR's schedule: weak guidance
// early keeps variety, full guidance by the end).
enum class CfgSchedule { Constant, Linear };
std::string to_string(CfgSchedule c);
CfgSchedule cfg_schedule_from_string(const std::string& s);

// Continuous models: the std of each reverse step of the diffusion head. Learned: the head's own
// interpolation between beta_t and beta~_t (what its training fitted). Fixed: beta~_t, the
// posterior's (the DDPM sampler of an epsilon-predicting head, which the head's epsilon supports
// as well): every model of a schedule then has the same stds, so CSpD's S (the product of the
// draft's over the target's stds before the last step) is 1 by construction.
enum class HeadVariance { Learned, Fixed };
std::string to_string(HeadVariance v);
HeadVariance head_variance_from_string(const std::string& s);

// What sampling a generation uses. The defaults are these initialisers, under a model's own
// (model.json "sampling", of_model); ranges, help, flags and JSON keys: the settings table
// (decode/settings/setting.h), whose entries the JSON, validation and front ends all read.
struct SamplingParams {
  double cfg_scale = 3.0;  // 1 = no guidance (batch of 1)
  CfgSchedule cfg_schedule = CfgSchedule::Constant;
  int64_t cfg_interval = -1;  // > -1: after this image-token index, use the cond logits only
  double temperature = 1.0;   // 0 = greedy
  int64_t top_k = 0;          // 0 = whole vocabulary
  double top_p = 1.0;
  int64_t diffusion_steps = 0;  // continuous models: the head's reverse steps (0: the model's)
  HeadVariance head_variance = HeadVariance::Learned;  // continuous models: each step's std
  int64_t num_iter = 0;  // MAR models: steps of the masking schedule (0: the model's)

  bool greedy() const { return temperature <= 0.0; }
  bool uses_cfg() const { return cfg_scale != 1.0; }
  // Throws adtree::Error naming the bad setting (the table's ranges; a bound from the model where
  // both sizes are given).
  void validate(int64_t vocab_size, int64_t image_tokens) const;
  // A condition batch of `batch` rows fits these settings: 2 ([cond; uncond]) with CFG, else 1.
  void check_condition_batch(int64_t batch) const;
  nlohmann::json to_json() const;
  // Reads known keys over `defaults`; unknown keys are an error (a typo must not pass silently).
  static SamplingParams from_json(const nlohmann::json& j, const SamplingParams& defaults);
  // A model's default sampling: its model.json "sampling" over these initialisers.
  static SamplingParams of_model(const nlohmann::json& model_sampling);
};

// logits = u + s * (c - u), in fp32; with a tensor s [rows], one scale per row ([rows, V] logits).
at::Tensor cfg_mix(const at::Tensor& cond, const at::Tensor& uncond, double scale);
at::Tensor cfg_mix(const at::Tensor& cond, const at::Tensor& uncond, const at::Tensor& scale);
// Keeps every logit >= the k-th largest (ties survive); the rest become -inf. k <= 0: no-op.
at::Tensor top_k_filter(const at::Tensor& logits, int64_t k);
// Keeps the smallest prefix of the descending order whose mass before each kept token is < p
// (so the top token always survives); the rest become -inf. p >= 1: no-op.
at::Tensor top_p_filter(const at::Tensor& logits, double p);

struct Processed {
  at::Tensor probs;  // [rows, V] fp32: the target distribution p (one-hot at the argmax if greedy)
  at::Tensor top1;   // [rows] max probability after CFG and temperature (T = 1 when greedy)
  at::Tensor view;   // [rows, V] what a person inspects: probs, or the T = 1 softmax when greedy
  at::Tensor mixed;  // [rows, V] fp32 CFG-mixed logits before temperature and filters (CASCADE)
};

class LogitsProcessor {
 public:
  // `image_tokens`: N of the linear CFG schedule (the model's image tokens); a linear schedule
  // without it is an error.
  explicit LogitsProcessor(SamplingParams params, int64_t image_tokens = 0);
  const SamplingParams& params() const { return params_; }

  // Model logits [B, rows, V] with B = 2 ([cond; uncond]) when CFG is on, else B = 1; rows are
  // consecutive positions whose first predicts image token `first_index` (for cfg_interval and the
  // CFG schedule).
  Processed process(const at::Tensor& logits, int64_t first_index) const;
  // Same for rows predicting arbitrary image indices (the nodes of a draft tree).
  Processed process_rows(const at::Tensor& logits, const std::vector<int64_t>& token_index) const;
  // The same with the image indices as a long tensor on the logits' device (the device step).
  Processed process_rows(const at::Tensor& logits, const at::Tensor& token_index) const;

 private:
  // Whether a row's image index changes its CFG mix (cfg_interval, a linear schedule).
  bool mix_by_index() const;
  SamplingParams params_;
  int64_t image_tokens_ = 0;
};

// Inverse-CDF draw from a probability row [V] (any device; read on the CPU) with the job's Rng.
int64_t sample_from(const at::Tensor& probs, Rng& rng);

}  // namespace adtree::decode
