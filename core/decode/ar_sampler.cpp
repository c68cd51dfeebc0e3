#include "decode/ar_sampler.h"

#include <c10/core/InferenceMode.h>

#include <chrono>
#include <optional>

#include "decode/stats/trace_record.h"
#include "decode/verify/coupling.h"
#include "model/gpu/cuda_graph.h"
#include "model/gpu/static_forward.h"
#include "util/clock.h"
#include "util/error.h"

namespace adtree::decode {

namespace {

// The one-token steps on fixed shapes: one block, captured once where graphs are built.
class FixedSteps {
 public:
  FixedSteps(const model::Gpt& gpt, model::KvCache& cache)
      : gpt_(gpt), cache_(cache), block_(model::new_static_block(cache, 1)) {}
  model::Gpt::Output step(int64_t token, int64_t index) {
    const auto tok = at::full({cache_.batch(), 1}, token, at::kLong);
    const auto pos = at::full({1}, gpt_.config().cond_tokens() + index, at::kLong);
    model::fill_static_block(block_, cache_, gpt_.rope(), tok, pos);
    if (!graph_) graph_ = model::capture_forward(gpt_, block_, cache_);
    return graph_ ? graph_->replay() : gpt_.forward_static(block_, cache_);
  }
  bool captured() const { return graph_ != nullptr; }

 private:
  const model::Gpt& gpt_;
  model::KvCache& cache_;
  model::StaticBlock block_;
  std::unique_ptr<model::GraphedForward> graph_;
};

// The coupled choice and the top-1 of row 0 of `p`: on the host, or on the device with one read of
// both (the fixed-shape steps).
std::pair<int64_t, float> choose(const Processed& p, CouplingNoise& noise, int64_t n, bool device) {
  if (!device) return {noise.choose(p.probs[0], n), p.top1[0].item<float>()};
  const auto row = p.probs[0].to(at::kDouble);
  const auto pick = (row * noise.weights_on(n, 1, row.device())[0]).argmax().to(at::kDouble);
  const auto host = at::stack({pick, p.top1[0].to(at::kDouble)}).to(at::kCPU);
  return {int64_t(host[0].item<double>()), float(host[1].item<double>())};
}

// The result before the first token: the run's settings and an empty grid.
DecodeResult ar_result(const model::GptConfig& cfg, const SamplingParams& params, uint64_t seed) {
  DecodeResult res;
  res.stats.method = "ar";
  auto& settings = res.stats.settings;
  settings.request.sampling = params;
  settings.request.seed = seed;
  settings.verify = params.greedy() ? "greedy" : "coupled";
  res.stats.grids = CellGrids(cfg.grid_h, cfg.grid_w);
  res.tokens.reserve(size_t(cfg.image_tokens()));
  return res;
}

// Token n (one committed cell per step) into the one statistics format, its trace when traced,
// and the streamed event.
void record_token(DecodeResult& res, int64_t n, int64_t tok, float top1, double verify_ms,
                  double sample_ms, const Processed& p, const TraceOptions& trace,
                  const StepCallback& on_step) {
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
}
}  // namespace

DecodeResult generate_ar(const model::Gpt& gpt, const model::Condition& cond,
                         const SamplingParams& params, uint64_t seed, const StepCallback& on_step,
                         const std::atomic<bool>* cancel, const TraceOptions& trace,
                         bool fixed_shapes) {
  c10::InferenceMode guard;
  const auto& cfg = gpt.config();
  params.check_condition_batch(cond.batch());  // the settings were checked by run_decode
  const int64_t batch = cond.batch();
  const auto t_start = Clock::now();
  LogitsProcessor proc(params, cfg.image_tokens());
  CouplingNoise noise(seed, cfg.vocab_size);  // Gumbel-max: x_n = argmax log p_n + g_n (coupling.h)
  DecodeResult res = ar_result(cfg, params, seed);
  const int64_t n_tokens = cfg.image_tokens();

  auto cache = gpt.new_cache(batch, 0);
  const bool fixed = fixed_shapes || gpt.device().is_cuda();
  std::optional<FixedSteps> fixed_steps;
  if (fixed) fixed_steps.emplace(gpt, cache);
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
    const auto [tok, top1] = choose(p, noise, n, fixed);
    noise.forget_before(n + 1);
    const double sample_ms = ms_since(t0);

    record_token(res, n, tok, top1, verify_ms, sample_ms, p, trace, on_step);
    if (n + 1 < n_tokens) {  // the last token needs no forward: nothing comes after it
      t0 = Clock::now();
      if (fixed_steps) {
        out = fixed_steps->step(tok, n);
      } else {
        out = gpt.forward_tokens(cache, at::full({batch, 1}, tok, at::kLong), n);
      }
      cache.commit();
      verify_ms = ms_since(t0);
    }
  }
  res.stats.settings.fixed_shapes = fixed;
  res.stats.settings.graphs = fixed_steps && fixed_steps->captured() ? 1 : 0;
  res.stats.finish(ms_since(t_start));
  return res;
}

}  // namespace adtree::decode
