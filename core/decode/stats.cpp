#include "decode/stats.h"

#include "util/error.h"

namespace adtree::decode {

CellGrids::CellGrids(int64_t h, int64_t w)
    : h_(h), w_(w), cells_(size_t(h * w)), filled_(size_t(h * w), 0) {}

void CellGrids::set(int64_t cell, const CellStats& s) {
  if (cell < 0 || cell >= h_ * w_) throw Error("cell index out of range of the grid");
  cells_[size_t(cell)] = s;
  filled_[size_t(cell)] = 1;
}

bool CellGrids::all_filled() const {
  for (auto f : filled_) {
    if (!f) return false;
  }
  return true;
}

nlohmann::json CellGrids::to_json() const {
  auto grid = [&](auto get) {
    nlohmann::json rows = nlohmann::json::array();
    for (int64_t r = 0; r < h_; ++r) {
      nlohmann::json row = nlohmann::json::array();
      for (int64_t c = 0; c < w_; ++c) {
        const size_t i = size_t(r * w_ + c);
        row.push_back(filled_[i] ? nlohmann::json(get(cells_[i])) : nlohmann::json());
      }
      rows.push_back(std::move(row));
    }
    return rows;
  };
  return {{"h", h_},
          {"w", w_},
          {"depth", grid([](const CellStats& s) { return s.depth; })},
          {"top1", grid([](const CellStats& s) { return s.top1; })},
          {"accept_len", grid([](const CellStats& s) { return s.accept_len; })},
          {"tree_depth", grid([](const CellStats& s) { return s.tree_depth; })},
          {"tree_width", grid([](const CellStats& s) { return s.tree_width; })},
          {"rank", grid([](const CellStats& s) { return s.rank; })}};
}

nlohmann::json RunSummary::to_json() const {
  return {{"tokens", tokens},
          {"steps", steps},
          {"target_forwards", target_forwards},
          {"tau", tau},
          {"mean_drafted", mean_drafted},
          {"wall_ms", wall_ms},
          {"tokens_per_s", tokens_per_s},
          {"time_ms", {{"draft", t_draft_ms}, {"verify", t_verify_ms}, {"sample", t_sample_ms},
                       {"other", t_other_ms}}}};
}

nlohmann::json to_json(const StepRecord& r) {
  return {{"step", r.step},
          {"method", r.method},
          {"tree", {{"d", r.tree_depth}, {"k", r.tree_width}, {"N", r.budget}}},
          {"drafted", r.drafted},
          {"committed", r.committed},
          {"alpha", r.alpha},
          {"first_cell", r.first_cell},
          {"cum_tokens", r.cum_tokens},
          {"target_forwards", r.target_forwards},
          {"time_ms", {{"draft", r.t_draft_ms}, {"verify", r.t_verify_ms},
                       {"sample", r.t_sample_ms}, {"other", r.t_other_ms}}}};
}

void RunStats::add_step(const StepRecord& r) {
  steps.push_back(r);
  const int64_t reached = r.committed - 1;  // depth of the accepted path
  if (int64_t(depth_reach.size()) <= reached) depth_reach.resize(size_t(reached + 1), 0);
  for (int64_t j = 0; j <= reached; ++j) ++depth_reach[size_t(j)];
}

void RunStats::finish(double wall_ms) {
  RunSummary s;
  int64_t drafted = 0;
  for (const auto& r : steps) {
    s.tokens += r.committed;
    s.target_forwards += r.target_forwards;
    drafted += r.drafted;
    s.t_draft_ms += r.t_draft_ms;
    s.t_verify_ms += r.t_verify_ms;
    s.t_sample_ms += r.t_sample_ms;
    s.t_other_ms += r.t_other_ms;
  }
  s.steps = int64_t(steps.size());
  s.tau = s.target_forwards ? double(s.tokens) / double(s.target_forwards) : 0;
  s.mean_drafted = s.steps ? double(drafted) / double(s.steps) : 0;
  s.wall_ms = wall_ms;
  s.tokens_per_s = wall_ms > 0 ? 1000.0 * double(s.tokens) / wall_ms : 0;
  summary = s;
}

nlohmann::json RunStats::to_json() const {
  nlohmann::json st = nlohmann::json::array();
  for (const auto& r : steps) st.push_back(decode::to_json(r));
  nlohmann::json reach = nlohmann::json::array();
  for (size_t j = 0; j < depth_reach.size(); ++j) {
    reach.push_back({{"depth", j},
                     {"steps", depth_reach[j]},
                     {"share", steps.empty() ? 0.0 : double(depth_reach[j]) / double(steps.size())}});
  }
  return {{"format", "adtree-stats"}, {"version", 1},     {"method", method},
          {"settings", settings},     {"summary", summary.to_json()},
          {"depth_reach", reach},     {"grids", grids.to_json()}, {"steps", st}};
}

}  // namespace adtree::decode
