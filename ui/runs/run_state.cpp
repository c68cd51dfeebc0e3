#include "ui/runs/run_state.h"
#include "decode/settings/method_table.h"

#include <QObject>
#include <QStringList>

#include <algorithm>
#include <cmath>
#include <limits>

namespace adtree::ui {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// The speed plot averages over this much time: single AR steps are ~2 ms, far too noisy to show.
constexpr double kRateWindowS = 0.25;
constexpr double kMinRateWindowS = 0.05;
}  // namespace

void RunState::clear() {
  job_ = 0;
  method_ = decode::Method::Ar;
  grid_h_ = grid_w_ = committed_ = 0;
  for (auto& m : maps_) m.clear();
  tokens_.clear();
  vectors_.clear();
  token_dim_ = 0;
  ranks_.clear();
  step_index_.clear();
  step_committed_.clear();
  step_d_.clear();
  step_k_.clear();
  step_seconds_.clear();
  step_rate_.clear();
  accept_hist_.clear();
  traces_.clear();
  step_first_.clear();
  step_cum_.clear();
  order_.clear();
  order_rank_.clear();
  in_order_ = true;
  view_step_ = -1;
  view_committed_ = 0;
  for (auto& m : view_maps_) m.clear();
  view_tokens_.clear();
  forwards_ = 0;
  elapsed_ms_ = 0;
  finished_ = false;
  final_tokens_per_s_ = 0;
  ++version_;
}

void RunState::showEmpty(int gridH, int gridW, const MapRanges& ranges) {
  clear();
  grid_h_ = gridH;
  grid_w_ = gridW;
  ranges_ = ranges;
  for (auto& m : maps_) m = QVector<double>(cells(), kNaN);
  ++version_;
}

void RunState::reset(const engine::JobStarted& s, const MapRanges& ranges) {
  clear();
  job_ = s.job;
  // The engine's event names the method by its key; an event made by hand (a view on its own)
  // may name none.
  method_ = s.method.empty() ? decode::Method::Ar : decode::method_from_string(s.method);
  grid_h_ = int(s.grid_h);
  grid_w_ = int(s.grid_w);
  ranges_ = ranges;
  for (auto& m : maps_) m = QVector<double>(cells(), kNaN);
  tokens_ = QVector<qint64>(cells(), -1);
  ranks_ = QVector<int>(cells(), 0);
  order_rank_ = QVector<int>(cells(), -1);
  const int n = cells();
  for (auto* v :
       {&step_index_, &step_committed_, &step_d_, &step_k_, &step_seconds_, &step_rate_}) {
    v->reserve(n);
  }
}

void RunState::addSteps(const std::vector<engine::JobStep>& steps) {
  for (const auto& s : steps) {
    if (s.job != job_) continue;  // a late step of a run no longer on screen
    const auto& r = s.record;
    for (size_t i = 0; i < s.cells.size(); ++i) {
      const int cell = int(r.cell(i));
      if (cell < 0 || cell >= cells()) continue;
      const auto& c = s.cells[i];
      maps_[Depth][cell] = c.depth;
      maps_[Top1][cell] = c.top1;
      maps_[AcceptLen][cell] = c.accept_len;
      maps_[TreeDepth][cell] = c.tree_depth;
      maps_[TreeWidth][cell] = c.tree_width;
      maps_[Origin][cell] = double(c.origin);
      maps_[PlanDepth][cell] = c.plan_depth;
      maps_[PlanWidth][cell] = c.plan_width;
      tokens_[cell] = s.tokens[i];
      addVector(cell, s, i);
      if (order_rank_[cell] < 0) {
        in_order_ = in_order_ && cell == order_.size();
        order_rank_[cell] = int(order_.size());
        order_.push_back(cell);
      }
      ranks_[cell] = c.rank;
      ranges_.depth_max = std::max(ranges_.depth_max, double(c.depth));
      ranges_.top1_max = std::max(ranges_.top1_max, double(c.top1));
      ranges_.accept_max = std::max(ranges_.accept_max, double(c.accept_len));
      ranges_.ran_d_max = std::max(ranges_.ran_d_max, double(c.tree_depth));
      ranges_.ran_k_max = std::max(ranges_.ran_k_max, double(c.tree_width));
      ranges_.tree_d_min = std::min(ranges_.tree_d_min, double(c.plan_depth));
      ranges_.tree_d_max = std::max(ranges_.tree_d_max, double(c.plan_depth));
      ranges_.tree_k_min = std::min(ranges_.tree_k_min, double(c.plan_width));
      ranges_.tree_k_max = std::max(ranges_.tree_k_max, double(c.plan_width));
    }
    committed_ = int(std::min<int64_t>(r.cum_tokens, cells()));
    forwards_ += r.target_forwards;
    elapsed_ms_ = s.elapsed_ms;
    const double t = s.elapsed_ms / 1000.0;
    step_index_.push_back(double(r.step));
    step_committed_.push_back(double(r.committed));
    step_d_.push_back(double(r.tree_depth));
    step_k_.push_back(double(r.tree_width));
    step_seconds_.push_back(t);
    step_first_.push_back(int(r.first_cell));
    step_cum_.push_back(int(r.cum_tokens));
    traces_.push_back(s.trace);
    ++accept_hist_[int(r.committed)];
    // Sliding-window speed: tokens committed in the last kRateWindowS seconds (or since the start).
    int j = int(step_seconds_.size()) - 1;
    double tokens = 0;
    while (j >= 0 && step_seconds_[j] > t - kRateWindowS) tokens += step_committed_[j--];
    const double t0 = j >= 0 ? step_seconds_[j] : 0.0;
    // The first few steps (prefill included, a window of a few ms) give no meaningful rate: a gap.
    step_rate_.push_back(t - t0 >= kMinRateWindowS ? tokens / (t - t0) : kNaN);
  }
  ++version_;
}

// The i-th token of step `s` is a vector (a continuous model's): kept per cell, the grid made on
// the first one (its size says the token's dimension).
void RunState::addVector(int cell, const engine::JobStep& s, size_t i) {
  if (s.vectors.empty() || s.tokens.empty()) return;
  const int dim = int(s.vectors.size() / s.tokens.size());
  if (dim <= 0 || (token_dim_ != 0 && dim != token_dim_)) return;
  if (token_dim_ == 0) {
    token_dim_ = dim;
    vectors_ = QVector<float>(cells() * dim, std::numeric_limits<float>::quiet_NaN());
  }
  std::copy_n(s.vectors.begin() + std::ptrdiff_t(i) * dim, dim, vectors_.begin() + cell * dim);
}

void RunState::finish(const engine::JobFinished& f) {
  if (f.job != job_) return;
  finished_ = true;
  final_tokens_per_s_ = f.summary.tokens_per_s;
  ++version_;
}

void RunState::restore(const decode::RunStats& stats, const std::vector<int64_t>& tokens,
                       double elapsedMs, const MapRanges& ranges,
                       const std::vector<float>& vectors) {
  // Vectors are whole only when they give every token the same count of numbers.
  const size_t dim =
      !tokens.empty() && vectors.size() % tokens.size() == 0 ? vectors.size() / tokens.size() : 0;
  engine::JobStarted st;
  // A job id the engine never hands out (it counts up from 1), so late engine events never match.
  static engine::JobId restored = ~engine::JobId(0) >> 1;
  st.job = ++restored;
  st.method = decode::to_string(stats.settings.method());
  st.grid_h = stats.grids.h();
  st.grid_w = stats.grids.w();
  st.total_tokens = st.grid_h * st.grid_w;
  reset(st, ranges);
  std::vector<engine::JobStep> steps;
  double ms = 0, total_ms = 0;
  for (const auto& r : stats.steps)
    total_ms += r.t_draft_ms + r.t_verify_ms + r.t_sample_ms + r.t_other_ms;
  // Spread the recorded wall time over the steps in proportion to their measured parts.
  const double scale = total_ms > 0 && elapsedMs > 0 ? elapsedMs / total_ms : 1.0;
  for (size_t i = 0; i < stats.steps.size(); ++i) {
    const auto& r = stats.steps[i];
    engine::JobStep js;
    js.job = st.job;
    js.record = r;
    for (int64_t j = 0; j < r.committed; ++j) {
      const int64_t c = r.cell(size_t(j));
      if (c < 0 || c >= int64_t(tokens.size()) || c >= stats.grids.h() * stats.grids.w()) break;
      js.tokens.push_back(tokens[size_t(c)]);
      if (dim > 0) {
        const auto first = vectors.begin() + std::ptrdiff_t(size_t(c) * dim);
        js.vectors.insert(js.vectors.end(), first, first + std::ptrdiff_t(dim));
      }
      js.cells.push_back(stats.grids.filled(c) ? stats.grids.at(c) : decode::CellStats{});
    }
    ms += (r.t_draft_ms + r.t_verify_ms + r.t_sample_ms + r.t_other_ms) * scale;
    js.elapsed_ms = ms;
    if (i < stats.traces.size())
      js.trace = std::make_shared<const decode::StepTrace>(stats.traces[i]);
    steps.push_back(std::move(js));
  }
  addSteps(steps);
  engine::JobFinished f;
  f.job = st.job;
  f.summary = stats.summary;
  finish(f);
  elapsed_ms_ = elapsedMs > 0 ? elapsedMs : stats.summary.wall_ms;
}

void RunState::setViewStep(int step) {
  if (step >= steps() - 1) step = -1;  // the last step is the whole run
  if (step == view_step_) return;
  view_step_ = step;
  if (step >= 0) {
    view_committed_ = std::min(step_cum_.value(step, 0), cells());
    // The cells committed after the step, whatever their place on the grid, are hidden.
    for (int m = 0; m < MapCount; ++m) {
      view_maps_[m] = maps_[m];
      for (int i = view_committed_; i < order_.size(); ++i) view_maps_[m][order_[i]] = kNaN;
    }
    view_tokens_ = tokens_;
    for (int i = view_committed_; i < order_.size(); ++i) view_tokens_[order_[i]] = -1;
  }
  ++version_;
}

bool RunState::hasTraces() const {
  for (const auto& t : traces_) {
    if (t) return true;
  }
  return false;
}

const decode::StepTrace* RunState::trace(int step) const {
  return step >= 0 && step < traces_.size() ? traces_[step].get() : nullptr;
}

int RunState::stepOfCell(int cell) const {
  if (cell < 0 || cell >= committed_) return -1;
  // step_cum_ is increasing: the first step whose cumulative count passes the cell.
  auto it = std::upper_bound(step_cum_.begin(), step_cum_.end(), cell);
  return it == step_cum_.end() ? -1 : int(it - step_cum_.begin());
}

const decode::CellTrace* RunState::cellTrace(int cell) const {
  const auto* t = trace(stepOfCell(cell));
  if (!t) return nullptr;
  for (const auto& c : t->cells) {
    if (c.cell == cell) return &c;
  }
  return nullptr;
}

double RunState::tokensPerSecond() const {
  if (finished_) return final_tokens_per_s_;
  return step_rate_.isEmpty() || std::isnan(step_rate_.back()) ? 0 : step_rate_.back();
}

double RunState::etaSeconds() const {
  const double rate = tokensPerSecond();
  if (finished_) return 0;
  if (rate <= 0 || committed_ == 0) return -1;
  return double(cells() - committed_) / rate;
}

// A vector token's cell (the continuous family: AR or CSpD): its numbers, then who made it. CSpD's
// cells say a draft's position and acceptance probability min(1, r) in the top-1 map's place.
QString RunState::describeVector(int cell) const {
  QStringList numbers;
  for (int d = 0; d < token_dim_; ++d)
    numbers << QString::number(vectors_.value(cell * token_dim_ + d), 'f', 3);
  QString s = QStringLiteral(", vector (%1)").arg(numbers.join(QStringLiteral(", ")));
  const int depth = int(maps_[Depth][cell]), drafted = int(maps_[TreeDepth][cell]);
  const int round = int(maps_[AcceptLen][cell]);
  const double p = maps_[Top1][cell];
  if (depth > 0) {
    s += QStringLiteral(
             "\nthe draft model's token: it stood at draft position %1 of %2 "
             "(acceptance probability %3)")
             .arg(depth)
             .arg(drafted)
             .arg(p, 0, 'f', 3);
  } else if (drafted == 0) {
    s += QStringLiteral("\nmade by the target alone (pre-fill or AR)");
  } else if (round > drafted) {
    s += QStringLiteral("\nthe target's token after all %1 drafts stood").arg(drafted);
  } else {
    s += QStringLiteral(
             "\nthe target's residual sample: the draft here was refused "
             "(acceptance probability %1)")
             .arg(p, 0, 'f', 3);
  }
  return s + QStringLiteral("\n%1 tokens that round").arg(round);
}

QString RunState::describeCell(int cell) const {
  if (cell < 0 || cell >= cells()) return {};
  const int r = cell / grid_w_, c = cell % grid_w_;
  QString head = QStringLiteral("Cell (row %1, col %2), token #%3").arg(r).arg(c).arg(cell);
  if (!filled(cell)) return head + QStringLiteral("\nnot generated yet");
  const auto v = [&](Map m) { return maps_[m][cell]; };
  if (token_dim_ > 0) return head + describeVector(cell);
  QString s = head + QStringLiteral(", code %1").arg(tokens_[cell]);
  const int depth = int(v(Depth)), origin = std::clamp(int(v(Origin)), 0, 2);
  static const char* kDrafted[] = {"", "the head's draft", "a free guess (no draft model)"};
  s += depth == 0 || origin == 0 ? QStringLiteral("\nsampled by the target (depth 0)")
                                 : QStringLiteral("\n%1, accepted at depth %2 (rank %3)")
                                       .arg(QLatin1String(kDrafted[origin]))
                                       .arg(depth)
                                       .arg(ranks_[cell]);
  s += QStringLiteral("\ntop-1 probability %1; %2 tokens that step")
           .arg(v(Top1), 0, 'f', 3)
           .arg(int(v(AcceptLen)));
  if (v(TreeDepth) > 0 || v(TreeWidth) > 0) {
    s += QStringLiteral("\ndrafted %1 levels x %2").arg(int(v(TreeDepth))).arg(int(v(TreeWidth)));
  } else {
    s += QStringLiteral("\nno draft tree (%1)")
             .arg(QString::fromStdString(decode::to_string(method_)));
  }
  if (v(PlanDepth) > 0 || v(PlanWidth) > 0) {
    s += QStringLiteral("; planned d %1, k %2").arg(int(v(PlanDepth))).arg(int(v(PlanWidth)));
  }
  if (cellTrace(cell)) s += QObject::tr("\nclick: the target's distribution here");
  return s;
}

}  // namespace adtree::ui
