#include "decode/continuous/cspd_decoder.h"

#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cmath>

#include "decode/continuous/continuous_stepper.h"
#include "decode/continuous/cspd_rule.h"
#include "decode/continuous/head_density.h"
#include "util/clock.h"
#include "util/error.h"

namespace adtree::decode {

namespace {

// The state of one CSpD decode: both steppers, the emitted tokens and the record.
struct Cspd {
  Cspd(const ContinuousSettings& settings, ContinuousStepper t, ContinuousStepper d, at::Tensor n,
       int64_t positions, int64_t dim, const ContinuousCallback& callback)
      : s(settings),
        target(std::move(t)),
        draft(std::move(d)),
        noise(std::move(n)),
        N(positions),
        D(dim),
        rng(settings.seed * 0x9E3779B97F4A7C15ULL + 0xC5D),
        on_step(callback) {}

  const ContinuousSettings& s;
  ContinuousStepper target, draft;
  at::Tensor noise;  // [N, K + 1, D]
  int64_t N, D;
  Rng rng;
  const ContinuousCallback& on_step;
  std::vector<at::Tensor> out;  // emitted tokens, [1, D] each
  ContinuousResult r;

  int64_t pos() const { return int64_t(out.size()); }
  at::Tensor tokens(int64_t from, int64_t to) const {
    if (from >= to) return at::empty({0, D}, at::kFloat);
    return at::cat(std::vector<at::Tensor>(out.begin() + from, out.begin() + to), 0);
  }
  // `log_r`, `log_s`: the judged draft's (NaN where none was judged).
  void emit(const at::Tensor& x, ContinuousOrigin o, int round, double p,
            double log_r = std::nan(""), double log_s = std::nan("")) {
    out.push_back(x.reshape({1, D}).to(at::kFloat));
    r.origin.push_back(o);
    r.round.push_back(round);
    r.accept_prob.push_back(p);
    r.log_ratio.push_back(log_r);
    r.log_s.push_back(log_s);
  }

  void prefill_token();
  void round();
  void record_round(int64_t p0, int64_t g, int64_t a, std::vector<CellStats>& cells,
                    const ContinuousTiming& before);
  struct Drafts {
    std::vector<model::HeadTrajectory> traj;
    at::Tensor x;  // [g, D]
  };
  Drafts propose(int64_t g);
  int64_t judge(const Drafts& d, const model::HeadTrajectory& tp, int64_t g, int round_no,
                std::vector<CellStats>& cells);
  // The target's conditions of positions pos .. pos+rows-1 after one forward over the drafts.
  ContinuousStepper::Conditions verify_forward(const at::Tensor& drafts, int64_t rows,
                                               int64_t& unfed);
};

// The target alone, as AR (pre-filling).
void Cspd::prefill_token() {
  const auto t0 = Clock::now();
  auto t = t0;
  const int64_t unfed = pos() - target.fed();
  const auto c = target.feed(tokens(target.fed(), pos()));
  target.keep(unfed);
  r.timing.target_backbone += ms_since(t);
  t = Clock::now();
  const auto last = [&](const at::Tensor& z) {
    return z.defined() ? z.narrow(0, z.size(0) - 1, 1) : z;
  };
  const auto h = target.head({last(c.z), last(c.z_uncond)}, noise.narrow(0, pos(), 1));
  r.timing.target_head += ms_since(t);
  emit(h.x0, ContinuousOrigin::Target, -1, std::nan(""));
  StepRecord rec;
  rec.method = "cspd";
  rec.committed = 1;
  rec.first_cell = pos() - 1;
  rec.target_forwards = 1;
  rec.t_verify_ms = ms_since(t0);
  record_step(r, rec, {CellStats{0, 0.0f, 1}}, h.x0, on_step);
}

Cspd::Drafts Cspd::propose(int64_t g) {
  Drafts d;
  auto t = Clock::now();
  const int64_t unfed = pos() - draft.fed();
  auto c = draft.feed(tokens(draft.fed(), pos()));
  draft.keep(unfed);
  r.timing.draft_backbone += ms_since(t);
  std::vector<at::Tensor> xs;
  for (int64_t j = 0; j < g; ++j) {
    const auto last = [](const at::Tensor& z) {
      return z.defined() ? z.narrow(0, z.size(0) - 1, 1) : z;
    };
    t = Clock::now();
    d.traj.push_back(draft.head({last(c.z), last(c.z_uncond)}, noise.narrow(0, pos() + j, 1)));
    xs.push_back(d.traj.back().x0);
    r.timing.draft_head += ms_since(t);
    if (j + 1 < g) {
      t = Clock::now();
      c = draft.feed(xs.back());
      draft.keep(1);
      r.timing.draft_backbone += ms_since(t);
    }
  }
  d.x = at::cat(xs, 0);
  return d;
}

ContinuousStepper::Conditions Cspd::verify_forward(const at::Tensor& drafts, int64_t rows,
                                                   int64_t& unfed) {
  unfed = pos() - target.fed();
  ContinuousStepper::Conditions first;
  if (unfed == 0) first = target.feed(at::empty({0, D}, at::kFloat));  // pos 0: the prefill's
  const auto c = target.feed(at::cat({tokens(target.fed(), pos()), drafts}, 0));
  // Output row j conditions token fed + j + 1: positions pos.. start at row unfed - 1.
  auto pick = [&](const at::Tensor& z, const at::Tensor& z0) -> at::Tensor {
    if (!z.defined()) return z;
    const auto all =
        unfed == 0 ? at::cat({z0, z}, 0) : z.narrow(0, unfed - 1, z.size(0) - unfed + 1);
    return all.narrow(0, 0, rows);
  };
  return {pick(c.z, first.z), pick(c.z_uncond, first.z_uncond)};
}

// Drafts in order while u < r; the first refused one is replaced by a residual sample. Returns
// how many stood; their cells' statistics go to `cells`.
int64_t Cspd::judge(const Drafts& d, const model::HeadTrajectory& tp, int64_t g, int round_no,
                    std::vector<CellStats>& cells) {
  int64_t a = 0;
  for (; a < g; ++a) {
    const auto x = token_row(d.x, a);
    const double widen = s.inner_temperature;
    const auto p_last = last_step_density(tp, a, 1.0);
    const auto q_last = last_step_density(d.traj[size_t(a)], 0, 1.0);
    const auto p_test = last_step_density(tp, a, widen);
    const auto q_test = last_step_density(d.traj[size_t(a)], 0, widen);
    const double log_s = d.traj[size_t(a)].log_std_before_last[0].item<double>() -
                         tp.log_std_before_last[a].item<double>();
    const auto v =
        cspd_verify_relaxed(x, p_test, q_test, p_last, q_last, log_s, rng, s.max_residual_tries);
    const double prob = std::exp(std::min(0.0, v.log_ratio));
    CellStats c{v.accepted ? int32_t(a + 1) : 0, float(prob), 0, int32_t(g), 1};
    c.origin = v.accepted ? decode::TokenOrigin::Head : decode::TokenOrigin::Target;
    cells.push_back(c);
    if (v.accepted) {
      ++r.accepted;
      emit(d.x[a], ContinuousOrigin::Accepted, round_no, prob, v.log_ratio, log_s);
      continue;
    }
    ++r.resampled;
    r.exhausted += v.exhausted ? 1 : 0;
    emit(at::tensor(v.token, at::TensorOptions().dtype(at::kDouble)).to(at::kFloat),
         ContinuousOrigin::Resampled, round_no, prob, v.log_ratio, log_s);
    break;
  }
  return a;
}

void Cspd::round() {
  const int64_t p0 = pos(), g = std::min<int64_t>(s.gamma, N - p0);
  const int round_no = int(r.rounds++);
  const auto before = r.timing;
  const auto d = propose(g);
  r.drafted += g;
  // The target: the drafts' positions and, if the picture goes on, the one after them.
  const int64_t rows = std::min<int64_t>(g + 1, N - p0);
  auto t = Clock::now();
  int64_t unfed = 0;
  const auto c = verify_forward(d.x, rows, unfed);
  r.timing.target_backbone += ms_since(t);
  t = Clock::now();
  const auto tp = target.head(c, noise.narrow(0, p0, rows));
  r.timing.target_head += ms_since(t);

  t = Clock::now();
  std::vector<CellStats> cells;
  const int64_t a = judge(d, tp, g, round_no, cells);
  if (a == g && rows > g) {
    emit(tp.x0[g], ContinuousOrigin::Bonus, round_no, std::nan(""));
    cells.push_back(CellStats{0, 0.0f, 0, int32_t(g), 1});
  }
  r.timing.resample += ms_since(t);
  // Both caches keep what stands: the target its unfed tokens and the accepted drafts.
  t = Clock::now();
  target.keep(unfed + a);
  r.timing.target_backbone += ms_since(t);
  draft.truncate(p0 + a);
  record_round(p0, g, a, cells, before);
}

// The round as a step of the run's statistics (decode/stats/stats.h).
void Cspd::record_round(int64_t p0, int64_t g, int64_t a, std::vector<CellStats>& cells,
                        const ContinuousTiming& before) {
  const int64_t committed = pos() - p0;
  for (auto& c : cells) c.accept_len = int32_t(committed);
  StepRecord rec;
  rec.method = "cspd";
  rec.tree_depth = g;
  rec.tree_width = 1;
  rec.budget = g;
  rec.drafted = g;
  rec.committed = committed;
  rec.alpha = double(a) / double(g);
  rec.first_cell = p0;
  rec.target_forwards = 1;
  rec.accepted_head = a;
  rec.plan_depth = g;
  rec.plan_width = 1;
  const auto& t = r.timing;
  rec.t_draft_ms = t.draft_backbone + t.draft_head - before.draft_backbone - before.draft_head;
  rec.t_verify_ms = t.target_backbone + t.target_head - before.target_backbone - before.target_head;
  rec.t_sample_ms = t.resample - before.resample;
  record_step(r, rec, cells, tokens(p0, pos()), on_step);
}

}  // namespace

ContinuousResult generate_cspd(const model::ContinuousGpt& target,
                               const model::ContinuousGpt& draft,
                               const model::Condition& target_cond,
                               const model::Condition& draft_cond, const ContinuousSettings& s,
                               const ContinuousCallback& on_step, const std::atomic<bool>* cancel) {
  c10::InferenceMode guard;
  if (s.gamma < 1 || s.gamma > 64) throw Error("CSpD: gamma must be in 1..64");
  if (!(s.prefill_ratio >= 0 && s.prefill_ratio <= 1)) {
    throw Error("CSpD: the pre-fill ratio must be in [0, 1]");
  }
  const auto &tc = target.config(), &dc = draft.config();
  if (tc.token_dim() != dc.token_dim() ||
      tc.backbone.image_tokens() != dc.backbone.image_tokens() ||
      tc.train_steps != dc.train_steps) {
    throw Error(
        "CSpD: the draft model must share the target's tokens, grid and diffusion schedule");
  }
  // Both heads take the target's number of reverse steps: aligned trajectories need the same.
  ContinuousSettings ss = s;
  if (ss.diffusion_steps <= 0) ss.diffusion_steps = tc.sample_steps;
  const auto t0 = Clock::now();
  auto t = Clock::now();
  ContinuousStepper tgt(target, target_cond, ss);
  const double prefill_target = ms_since(t);
  t = Clock::now();
  ContinuousStepper drf(draft, draft_cond, ss);
  const double prefill_draft = ms_since(t);
  const int64_t N = tc.backbone.image_tokens(), D = tc.token_dim();
  auto noise = trajectory_noise(ss.seed, N, ss.diffusion_steps, D);
  Cspd st(ss, std::move(tgt), std::move(drf), noise, N, D, on_step);
  st.r.stats.method = "cspd";
  st.r.stats.grids = CellGrids(tc.backbone.grid_h, tc.backbone.grid_w);
  st.r.timing.target_backbone += prefill_target;
  st.r.timing.draft_backbone += prefill_draft;
  const int64_t n_pre = std::min<int64_t>(N, int64_t(std::ceil(s.prefill_ratio * double(N))));
  while (st.pos() < N) {
    if (cancel && cancel->load()) {
      st.r.cancelled = true;
      break;
    }
    if (st.pos() < n_pre) {
      st.prefill_token();
    } else {
      st.round();
    }
  }
  st.r.tokens = st.tokens(0, st.pos());
  st.r.timing.total = ms_since(t0);
  st.r.stats.finish(st.r.timing.total);
  return std::move(st.r);
}

}  // namespace adtree::decode
