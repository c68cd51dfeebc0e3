#include "decode/ar_sampler.h"

#include <c10/core/InferenceMode.h>

#include <chrono>

#include "decode/coupling.h"
#include "decode/trace_record.h"
#include "util/error.h"

namespace adtree::decode {

namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}
}  // namespace

DecodeResult generate_ar(const model::Gpt& gpt, const model::Condition& cond,
                         const SamplingParams& params, uint64_t seed, const StepCallback& on_step,
                         const std::atomic<bool>* cancel, const TraceOptions& trace) {
  c10::InferenceMode guard;
  const auto& cfg = gpt.config();
  params.validate(cfg.vocab_size);
  const int64_t batch = params.uses_cfg() ? 2 : 1;
  if (cond.batch() != batch) {
    throw Error("the condition batch must be " + std::to_string(batch) +
                (batch == 2 ? " ([cond; uncond]) with CFG" : " without CFG"));
  }
  const auto t_start = Clock::now();
  LogitsProcessor proc(params);
  CouplingNoise noise(seed, cfg.vocab_size);  // Gumbel-max: x_n = argmax log p_n + g_n (coupling.h)
  DecodeResult res;
  res.stats.method = "ar";
  res.stats.settings = {{"method", "ar"},
                        {"seed", seed},
                        {"sampling", params.to_json()},
                        {"verify", params.greedy() ? "greedy" : "coupled"}};
  res.stats.grids = CellGrids(cfg.grid_h, cfg.grid_w);
  const int64_t n_tokens = cfg.image_tokens();
  res.tokens.reserve(size_t(n_tokens));

  auto cache = gpt.new_cache(batch, 0);
  auto t0 = Clock::now();
  auto out = gpt.prefill(cache, cond);
  double verify_ms = ms_since(t0);  // the prefill is charged to the first step
  for (int64_t n = 0; n < n_tokens; ++n) {
    if (cancel && cancel->load()) {
      res.cancelled = true;
      break;
    }
    t0 = Clock::now();
    auto p = proc.process(out.logits.narrow(1, out.logits.size(1) - 1, 1), n);
    const int64_t tok = noise.choose(p.probs[0], n);
    noise.forget_before(n + 1);
    const float top1 = p.top1[0].item<float>();
    const double sample_ms = ms_since(t0);

    res.tokens.push_back(tok);
    StepRecord rec;
    rec.step = n;
    rec.method = "ar";
    rec.committed = 1;
    rec.first_cell = n;
    rec.cum_tokens = n + 1;
    rec.target_forwards = 1;
    rec.t_verify_ms = verify_ms;
    rec.t_sample_ms = sample_ms;
    CellStats cs;
    cs.top1 = top1;
    cs.accept_len = 1;
    res.stats.grids.set(n, cs);
    res.stats.add_step(rec);
    if (trace.enabled) {
      StepTrace st;
      st.step = n;
      st.has_bonus = true;
      st.bonus = tok;
      st.cells.push_back(trace_cell(p.view[0], n, tok, false, nullptr, -1, trace));
      res.stats.traces.push_back(std::move(st));
    }
    if (on_step) {
      std::vector<int64_t> toks{tok};
      std::vector<CellStats> cells{cs};
      on_step(StepEvent{res.stats.steps.back(), toks, cells,
                        trace.enabled ? &res.stats.traces.back() : nullptr});
    }
    if (n + 1 < n_tokens) {  // the last token needs no forward: nothing comes after it
      t0 = Clock::now();
      auto in = at::full({batch, 1}, tok, at::TensorOptions().dtype(at::kLong));
      out = gpt.forward_tokens(cache, in, n);
      cache.commit();
      verify_ms = ms_since(t0);
    }
  }
  res.stats.finish(ms_since(t_start));
  return res;
}

}  // namespace adtree::decode
