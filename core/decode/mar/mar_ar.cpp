// MAR's own generation for one picture (decode/mar/mar_decoder.h): a schedule step a record.
#include <ATen/CPUGeneratorImpl.h>
#include <c10/core/InferenceMode.h>

#include <cmath>

#include "decode/mar/mar_decoder.h"
#include "decode/mar/mar_schedule.h"
#include "decode/mar/mar_stepper.h"
#include "util/clock.h"

namespace adtree::decode {

at::Tensor mar_order(uint64_t seed, int64_t n) {
  auto gen = at::detail::createCPUGenerator(seed ^ 0x4d41524f52444552ULL);  // "MARORDER"
  return at::randperm(n, gen, at::kLong);
}

at::Tensor mar_step_positions(const at::Tensor& order, const MarScheduleStep& st) {
  return std::get<0>(order.narrow(0, st.masked_after, st.count()).sort()).contiguous();
}

StepRecord mar_target_step_record(const std::string& method, const at::Tensor& pos) {
  StepRecord rec;
  rec.method = method;
  rec.committed = pos.numel();
  rec.cells.assign(pos.data_ptr<int64_t>(), pos.data_ptr<int64_t>() + pos.numel());
  rec.first_cell = rec.cells.front();
  rec.target_forwards = 1;
  return rec;
}

ContinuousResult generate_mar_ar(const model::MarModel& m, int64_t label,
                                 const ContinuousSettings& s, const ContinuousCallback& on_step,
                                 const std::atomic<bool>* cancel) {
  c10::InferenceMode guard;
  const auto t0 = Clock::now();
  const auto& c = m.backbone->config();
  const int64_t N = c.seq_len(), D = c.token_dim;
  MarStepper p(m, label, s);
  const auto order = mar_order(s.seed, N);
  const auto noise = trajectory_noise(s.seed, N, p.steps(), D);
  const auto plan = mar_masking_schedule(N, s.num_iter, s.cfg, s.cfg_linear);
  ContinuousResult r;
  r.stats.method = "ar";
  r.stats.grids = CellGrids(c.grid, c.grid);
  r.tokens = at::zeros({N, D});
  r.origin.assign(size_t(N), ContinuousOrigin::Target);
  r.round.assign(size_t(N), -1);
  r.accept_prob.assign(size_t(N), std::nan(""));
  auto known = at::zeros({N}, at::kBool);
  for (const auto& st : plan) {
    if (st.count() == 0) continue;  // MAR runs the pass and predicts nothing
    if (cancel && cancel->load()) {
      r.cancelled = true;
      break;
    }
    const auto ts = Clock::now();
    const auto pos = mar_step_positions(order, st);
    const auto cond = p.conditions(r.tokens, known, pos);
    const double backbone_ms = ms_since(ts);
    auto t = Clock::now();
    const auto x = p.head(cond, st.cfg, noise.index_select(0, pos), false).x0;
    const double head_ms = ms_since(t);
    r.timing.target_backbone += backbone_ms;
    r.timing.target_head += head_ms;
    r.tokens.index_copy_(0, pos, x);
    known.index_fill_(0, pos, true);
    auto rec = mar_target_step_record("ar", pos);
    rec.t_verify_ms = backbone_ms;
    rec.t_sample_ms = head_ms;
    const std::vector<CellStats> cells(size_t(st.count()), CellStats{0, 0.0f, int32_t(st.count())});
    record_step(r, rec, cells, x, on_step);
  }
  r.timing.total = ms_since(t0);
  r.stats.finish(r.timing.total);
  return r;
}

}  // namespace adtree::decode
