#include "decode/continuous/continuous_ar.h"

#include <c10/core/InferenceMode.h>

#include <cmath>

#include "decode/continuous/continuous_stepper.h"
#include "util/clock.h"

namespace adtree::decode {

ContinuousResult generate_continuous_ar(const model::ContinuousGpt& m, const model::Condition& cond,
                                        const ContinuousSettings& s,
                                        const ContinuousCallback& on_step,
                                        const std::atomic<bool>* cancel) {
  c10::InferenceMode guard;
  const auto t0 = Clock::now();
  ContinuousResult r;
  auto t = Clock::now();
  ContinuousStepper p(m, cond, s);
  r.timing.target_backbone += ms_since(t);
  const int64_t N = m.config().backbone.image_tokens(), D = m.config().token_dim();
  const auto noise = trajectory_noise(s.seed, N, p.steps(), D);
  std::vector<at::Tensor> out;
  at::Tensor last = at::empty({0, D}, at::kFloat);
  r.stats.method = "ar";
  r.stats.grids = CellGrids(m.config().backbone.grid_h, m.config().backbone.grid_w);
  for (int64_t i = 0; i < N; ++i) {
    if (cancel && cancel->load()) {
      r.cancelled = true;
      break;
    }
    const auto ts = Clock::now();
    t = ts;
    const auto c = p.feed(last);
    if (last.size(0) > 0) p.keep(1);
    r.timing.target_backbone += ms_since(t);
    t = Clock::now();
    last = p.head(c, noise.narrow(0, i, 1)).x0;
    r.timing.target_head += ms_since(t);
    out.push_back(last);
    r.origin.push_back(ContinuousOrigin::Target);
    r.round.push_back(-1);
    r.accept_prob.push_back(std::nan(""));
    StepRecord rec;
    rec.method = "ar";
    rec.committed = 1;
    rec.first_cell = i;
    rec.target_forwards = 1;
    rec.t_verify_ms = ms_since(ts);
    record_step(r, rec, {CellStats{0, 0.0f, 1}}, last, on_step);
  }
  r.tokens = out.empty() ? at::empty({0, D}, at::kFloat) : at::cat(out, 0);
  r.timing.total = ms_since(t0);
  r.stats.finish(r.timing.total);
  return r;
}

}  // namespace adtree::decode
