// CSpD on MAR models in MAR's random order (decode/mar/mar_decoder.h has the round).
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cmath>

#include "decode/continuous/cspd_rule.h"
#include "decode/continuous/head_density.h"
#include "decode/mar/mar_decoder.h"
#include "decode/mar/mar_schedule.h"
#include "decode/mar/mar_stepper.h"
#include "util/clock.h"
#include "util/error.h"

namespace adtree::decode {

namespace {

// One drafted schedule step: its positions, the draft's trajectories and the target's.
struct DraftedStep {
  const MarScheduleStep* step;
  at::Tensor pos;  // [n] long, ascending
  model::HeadTrajectory q, p;
};

struct MarCspd {
  MarCspd(const ContinuousSettings& settings, MarStepper t, MarStepper d, int64_t n, int64_t dim,
          const ContinuousCallback& callback)
      : s(settings),
        target(std::move(t)),
        draft(std::move(d)),
        N(n),
        D(dim),
        order(mar_order(s.seed, N)),
        noise(trajectory_noise(s.seed, N, target.steps(), D)),
        plan(mar_masking_schedule(N, s.num_iter, s.cfg, s.cfg_linear)),
        rng(settings.seed * 0x9E3779B97F4A7C15ULL + 0x3A5),
        on_step(callback),
        known(at::zeros({N}, at::kBool)) {}

  const ContinuousSettings& s;
  MarStepper target, draft;
  int64_t N, D;
  at::Tensor order, noise;
  std::vector<MarScheduleStep> plan;
  Rng rng;
  const ContinuousCallback& on_step;
  at::Tensor known;
  size_t next = 0;  // the next schedule step
  int64_t done = 0;
  ContinuousResult r;

  at::Tensor positions(const MarScheduleStep& st) const { return mar_step_positions(order, st); }
  void target_step(const MarScheduleStep& st);
  void round();
  std::vector<DraftedStep> propose(const std::vector<const MarScheduleStep*>& steps);
  void verify(std::vector<DraftedStep>& steps);
  void judge(std::vector<DraftedStep>& steps, int round_no, std::vector<CellStats>& cells,
             at::Tensor& out);
  void record_round(const std::vector<DraftedStep>& steps, const std::vector<CellStats>& cells,
                    const at::Tensor& out, const ContinuousTiming& before, int64_t accepted);
};

// The target alone (pre-filling): one schedule step, as AR but with the last step's noise.
void MarCspd::target_step(const MarScheduleStep& st) {
  const auto t0 = Clock::now();
  const auto pos = positions(st);
  const auto c = target.conditions(r.tokens, known, pos);
  r.timing.target_backbone += ms_since(t0);
  auto t = Clock::now();
  const auto x = target.head(c, st.cfg, noise.index_select(0, pos), true).x0;
  r.timing.target_head += ms_since(t);
  r.tokens.index_copy_(0, pos, x);
  known.index_fill_(0, pos, true);
  done += st.count();
  auto rec = mar_target_step_record("cspd", pos);
  rec.t_verify_ms = ms_since(t0);
  record_step(r, rec, std::vector<CellStats>(size_t(st.count()), CellStats{0, 0.0f, 1}), x,
              on_step);
}

// The draft runs the round's steps one by one, each seeing its own earlier drafts.
std::vector<DraftedStep> MarCspd::propose(const std::vector<const MarScheduleStep*>& steps) {
  std::vector<DraftedStep> out;
  auto tokens = r.tokens.clone();
  auto seen = known.clone();
  for (const auto* st : steps) {
    DraftedStep d{st, positions(*st), {}, {}};
    auto t = Clock::now();
    const auto c = draft.conditions(tokens, seen, d.pos);
    r.timing.draft_backbone += ms_since(t);
    t = Clock::now();
    d.q = draft.head(c, st->cfg, noise.index_select(0, d.pos), true);
    r.timing.draft_head += ms_since(t);
    tokens.index_copy_(0, d.pos, d.q.x0);
    seen.index_fill_(0, d.pos, true);
    out.push_back(std::move(d));
  }
  return out;
}

// One target pass from the tokens known before the round conditions every drafted position;
// its head then runs each step's positions at that step's guidance.
void MarCspd::verify(std::vector<DraftedStep>& steps) {
  std::vector<at::Tensor> all;
  for (const auto& d : steps) all.push_back(d.pos);
  auto t = Clock::now();
  const auto c = target.conditions(r.tokens, known, at::cat(all));
  r.timing.target_backbone += ms_since(t);
  t = Clock::now();
  int64_t row = 0;
  for (auto& d : steps) {
    const int64_t n = d.pos.numel();
    MarStepper::Conditions ci{c.z.narrow(0, row, n),
                              c.z_uncond.defined() ? c.z_uncond.narrow(0, row, n) : at::Tensor()};
    d.p = target.head(ci, d.step->cfg, noise.index_select(0, d.pos), true);
    row += n;
  }
  r.timing.target_head += ms_since(t);
}

// Every drafted token on its own: it stands, or a residual draw replaces it (no truncation).
void MarCspd::judge(std::vector<DraftedStep>& steps, int round_no, std::vector<CellStats>& cells,
                    at::Tensor& out) {
  std::vector<at::Tensor> xs;
  for (size_t j = 0; j < steps.size(); ++j) {
    const auto& d = steps[j];
    for (int64_t i = 0; i < d.pos.numel(); ++i) {
      const int64_t cell = d.pos[i].item<int64_t>();
      const double widen = s.inner_temperature;
      const double log_s =
          d.q.log_std_before_last[i].item<double>() - d.p.log_std_before_last[i].item<double>();
      const auto v =
          cspd_verify_relaxed(token_row(d.q.x0, i), last_step_density(d.p, i, widen),
                              last_step_density(d.q, i, widen), last_step_density(d.p, i, 1.0),
                              last_step_density(d.q, i, 1.0), log_s, rng, s.max_residual_tries);
      const double prob = std::exp(std::min(0.0, v.log_ratio));
      CellStats c{v.accepted ? int32_t(j + 1) : 0, float(prob), 0, int32_t(steps.size()), 1};
      c.origin = v.accepted ? TokenOrigin::Head : TokenOrigin::Target;
      cells.push_back(c);
      ++r.drafted;
      r.accepted += v.accepted ? 1 : 0;
      r.resampled += v.accepted ? 0 : 1;
      r.exhausted += v.exhausted ? 1 : 0;
      const auto x =
          v.accepted ? d.q.x0[i].to(at::kFloat)
                     : at::tensor(v.token, at::TensorOptions().dtype(at::kDouble)).to(at::kFloat);
      xs.push_back(x.reshape({1, D}));
      r.origin[size_t(cell)] =
          v.accepted ? ContinuousOrigin::Accepted : ContinuousOrigin::Resampled;
      r.round[size_t(cell)] = round_no;
      r.accept_prob[size_t(cell)] = prob;
      r.log_ratio[size_t(cell)] = v.log_ratio;
      r.log_s[size_t(cell)] = log_s;
    }
  }
  out = at::cat(xs);
}

void MarCspd::round() {
  std::vector<const MarScheduleStep*> steps;
  for (; next < plan.size() && int64_t(steps.size()) < s.gamma; ++next)
    if (plan[next].count() > 0) steps.push_back(&plan[next]);
  if (steps.empty()) return;
  const int round_no = int(r.rounds++);
  const auto before = r.timing;
  auto drafted = propose(steps);
  verify(drafted);
  const auto t = Clock::now();
  std::vector<CellStats> cells;
  at::Tensor out;
  const int64_t accepted_before = r.accepted;
  judge(drafted, round_no, cells, out);
  r.timing.resample += ms_since(t);
  int64_t row = 0;
  for (const auto& d : drafted) {
    r.tokens.index_copy_(0, d.pos, out.narrow(0, row, d.pos.numel()));
    known.index_fill_(0, d.pos, true);
    row += d.pos.numel();
  }
  done += row;
  record_round(drafted, cells, out, before, r.accepted - accepted_before);
}

// The round as a step of the run's statistics (decode/stats/stats.h).
void MarCspd::record_round(const std::vector<DraftedStep>& steps,
                           const std::vector<CellStats>& cells, const at::Tensor& out,
                           const ContinuousTiming& before, int64_t accepted) {
  StepRecord rec;
  rec.method = "cspd";
  for (const auto& d : steps)
    rec.cells.insert(rec.cells.end(), d.pos.data_ptr<int64_t>(),
                     d.pos.data_ptr<int64_t>() + d.pos.numel());
  const int64_t g = int64_t(rec.cells.size());
  rec.tree_depth = int64_t(steps.size());
  rec.tree_width = 1;
  rec.budget = rec.drafted = g;
  rec.committed = g;
  rec.alpha = double(accepted) / double(g);
  rec.first_cell = rec.cells.front();
  rec.target_forwards = 1;
  rec.accepted_head = accepted;
  rec.plan_depth = int64_t(steps.size());
  rec.plan_width = 1;
  const auto& t = r.timing;
  rec.t_draft_ms = t.draft_backbone + t.draft_head - before.draft_backbone - before.draft_head;
  rec.t_verify_ms = t.target_backbone + t.target_head - before.target_backbone - before.target_head;
  rec.t_sample_ms = t.resample - before.resample;
  auto with_len = cells;
  for (auto& c : with_len) c.accept_len = int32_t(g);
  record_step(r, rec, with_len, out, on_step);
}

}  // namespace

ContinuousResult generate_mar_cspd(const model::MarModel& target, const model::MarModel& draft,
                                   int64_t label, const ContinuousSettings& s,
                                   const ContinuousCallback& on_step,
                                   const std::atomic<bool>* cancel) {
  c10::InferenceMode guard;
  if (s.gamma < 1 || s.gamma > 64) throw Error("CSpD: gamma must be in 1..64");
  if (!(s.prefill_ratio >= 0 && s.prefill_ratio <= 1))
    throw Error("CSpD: the pre-fill ratio must be in [0, 1]");
  const auto &tc = target.backbone->config(), &dc = draft.backbone->config();
  if (tc.seq_len() != dc.seq_len() || tc.token_dim != dc.token_dim ||
      tc.train_steps != dc.train_steps)
    throw Error("CSpD: the draft must share the target's tokens, grid and diffusion schedule");
  const auto t0 = Clock::now();
  // Both heads take the target's reverse steps: aligned trajectories need the same.
  ContinuousSettings ss = s;
  if (ss.diffusion_steps <= 0) ss.diffusion_steps = tc.sample_steps;
  const int64_t N = tc.seq_len(), D = tc.token_dim;
  MarCspd st(ss, MarStepper(target, label, ss), MarStepper(draft, label, ss), N, D, on_step);
  auto& r = st.r;
  r.stats.method = "cspd";
  r.stats.grids = CellGrids(tc.grid, tc.grid);
  r.tokens = at::zeros({N, D});
  r.origin.assign(size_t(N), ContinuousOrigin::Target);
  r.round.assign(size_t(N), -1);
  for (auto* v : {&r.accept_prob, &r.log_ratio, &r.log_s}) v->assign(size_t(N), std::nan(""));
  const int64_t n_pre = std::min<int64_t>(N, int64_t(std::ceil(s.prefill_ratio * double(N))));
  while (st.next < st.plan.size()) {
    if (cancel && cancel->load()) {
      r.cancelled = true;
      break;
    }
    if (st.done < n_pre) {
      const auto& step = st.plan[st.next++];
      if (step.count() > 0) st.target_step(step);
    } else {
      st.round();
    }
  }
  r.timing.total = ms_since(t0);
  r.stats.finish(r.timing.total);
  return std::move(st.r);
}

}  // namespace adtree::decode
