#include "decode/sampling.h"

#include <cmath>
#include <limits>

#include "util/device_sync.h"
#include "util/error.h"

namespace adtree::decode {

namespace {
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
}

void SamplingParams::check_condition_batch(int64_t batch) const {
  const int64_t want = uses_cfg() ? 2 : 1;
  if (batch != want) {
    throw Error("the condition batch must be " + std::to_string(want) +
                (want == 2 ? " ([cond; uncond]) with CFG" : " without CFG") + ", got " +
                std::to_string(batch));
  }
}

std::string to_string(CfgSchedule c) {
  return c == CfgSchedule::Linear ? "linear" : "constant";
}

CfgSchedule cfg_schedule_from_string(const std::string& s) {
  if (s == "constant") return CfgSchedule::Constant;
  if (s == "linear") return CfgSchedule::Linear;
  throw Error("unknown CFG schedule '" + s + "' (expected constant or linear)");
}

std::string to_string(HeadVariance v) {
  return v == HeadVariance::Fixed ? "fixed" : "learned";
}

HeadVariance head_variance_from_string(const std::string& s) {
  if (s == "learned") return HeadVariance::Learned;
  if (s == "fixed") return HeadVariance::Fixed;
  throw Error("unknown head variance '" + s + "' (expected learned or fixed)");
}

at::Tensor cfg_mix(const at::Tensor& cond, const at::Tensor& uncond, double scale) {
  auto c = cond.to(at::kFloat), u = uncond.to(at::kFloat);
  return u + scale * (c - u);
}

at::Tensor cfg_mix(const at::Tensor& cond, const at::Tensor& uncond, const at::Tensor& scale) {
  auto c = cond.to(at::kFloat), u = uncond.to(at::kFloat);
  return u + scale.to(at::kFloat).unsqueeze(-1) * (c - u);
}

LogitsProcessor::LogitsProcessor(SamplingParams params, int64_t image_tokens)
    : params_(params), image_tokens_(image_tokens) {
  if (params_.cfg_schedule == CfgSchedule::Linear && params_.uses_cfg() && image_tokens_ <= 0)
    throw Error("a linear CFG schedule needs the image's token count (internal error)");
}

bool LogitsProcessor::mix_by_index() const {
  return params_.cfg_interval > -1 || params_.cfg_schedule == CfgSchedule::Linear;
}

at::Tensor top_k_filter(const at::Tensor& logits, int64_t k) {
  if (k <= 0 || k >= logits.size(-1)) return logits;
  auto kth = std::get<0>(logits.topk(k, -1)).narrow(-1, k - 1, 1);  // k-th largest per row
  return logits.masked_fill(logits < kth, kNegInf);
}

at::Tensor top_p_filter(const at::Tensor& logits, double p) {
  if (p >= 1.0) return logits;
  auto sorted = logits.sort(-1, /*descending=*/true);
  auto sv = std::get<0>(sorted), si = std::get<1>(sorted);
  auto probs = at::softmax(sv, -1);
  auto mass_before = probs.cumsum(-1) - probs;
  auto drop_sorted = mass_before >= p;  // never the first token: its mass before is 0 < p
  auto drop = at::zeros_like(drop_sorted).scatter(-1, si, drop_sorted);
  return logits.masked_fill(drop, kNegInf);
}

Processed LogitsProcessor::process(const at::Tensor& logits, int64_t first_index) const {
  std::vector<int64_t> idx(size_t(logits.size(1)));
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = first_index + int64_t(i);
  return process_rows(logits, idx);
}

Processed LogitsProcessor::process_rows(const at::Tensor& logits,
                                        const std::vector<int64_t>& token_index) const {
  // The indices matter only for cfg_interval and the schedule: no copy to the device otherwise.
  return process_rows(
      logits, mix_by_index() && logits.size(0) == 2
                  ? to_device_async(at::tensor(token_index, at::TensorOptions().dtype(at::kLong)),
                                    logits.device())
                  : at::Tensor());
}

Processed LogitsProcessor::process_rows(const at::Tensor& logits,
                                        const at::Tensor& token_index) const {
  at::Tensor mixed;
  if (logits.size(0) == 2) {
    at::Tensor idx = mix_by_index() ? token_index.to(logits.device()) : at::Tensor();
    if (params_.cfg_schedule == CfgSchedule::Linear) {
      // s_i = 1 + (s - 1) i / N for the row predicting image token i (MAR's linear schedule).
      const auto scale =
          1.0 + (params_.cfg_scale - 1.0) * idx.to(at::kDouble) / double(image_tokens_);
      mixed = cfg_mix(logits[0], logits[1], scale);
    } else {
      mixed = cfg_mix(logits[0], logits[1], params_.cfg_scale);
    }
    if (params_.cfg_interval > -1) {
      // Rows predicting tokens after the interval use the cond logits only (LlamaGen cfg_interval).
      auto cond_only = (idx > params_.cfg_interval).unsqueeze(-1);
      mixed = at::where(cond_only, logits[0].to(at::kFloat), mixed);
    }
  } else {
    mixed = logits[0].to(at::kFloat);
  }
  Processed out;
  out.mixed = mixed;
  if (params_.greedy()) {
    auto sm = at::softmax(mixed, -1);
    out.top1 = std::get<0>(sm.max(-1));
    out.probs = at::zeros_like(sm).scatter_(-1, mixed.argmax(-1, true), 1.0);
    out.view = sm;
    return out;
  }
  auto scaled = params_.temperature == 1.0 ? mixed : mixed / params_.temperature;
  auto full = at::softmax(scaled, -1);
  out.top1 = std::get<0>(full.max(-1));
  const bool filters =
      (params_.top_k > 0 && params_.top_k < scaled.size(-1)) || params_.top_p < 1.0;
  out.probs =
      filters ? at::softmax(top_p_filter(top_k_filter(scaled, params_.top_k), params_.top_p), -1)
              : full;  // one softmax serves both when nothing is filtered
  out.view = out.probs;
  return out;
}

int64_t sample_from(const at::Tensor& probs, Rng& rng) {
  auto p = probs.to(at::kCPU, at::kFloat).contiguous();
  const float* d = p.data_ptr<float>();
  const int64_t n = p.numel();
  double total = 0;
  for (int64_t i = 0; i < n; ++i) total += d[i];
  if (!(total > 0)) throw Error("cannot sample: the distribution has no mass");
  const double u = rng.uniform() * total;
  double acc = 0;
  int64_t last_nonzero = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (d[i] <= 0) continue;
    acc += d[i];
    last_nonzero = i;
    if (u < acc) return i;
  }
  return last_nonzero;  // rounding at the very top of the CDF
}

}  // namespace adtree::decode
