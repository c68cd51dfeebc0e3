#include "decode/stats/stats.h"

#include <iterator>

#include "util/error.h"
#include "util/json_int.h"

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
          {"rank", grid([](const CellStats& s) { return s.rank; })},
          {"plan_depth", grid([](const CellStats& s) { return s.plan_depth; })},
          {"plan_width", grid([](const CellStats& s) { return s.plan_width; })},
          {"origin", grid([](const CellStats& s) { return int32_t(s.origin); })}};
}

nlohmann::json RunSummary::to_json() const {
  return {{"tokens", tokens},
          {"steps", steps},
          {"target_forwards", target_forwards},
          {"tau", tau},
          {"mean_drafted", mean_drafted},
          {"relaxed", relaxed},
          {"accepted", {{"head", accepted_head}, {"guess", accepted_guess}}},
          {"wall_ms", wall_ms},
          {"tokens_per_s", tokens_per_s},
          {"time_ms",
           {{"draft", t_draft_ms},
            {"verify", t_verify_ms},
            {"sample", t_sample_ms},
            {"other", t_other_ms}}}};
}

nlohmann::json to_json(const StepRecord& r) {
  auto j = nlohmann::json{{"step", r.step},
                          {"method", r.method},
                          {"tree", {{"d", r.tree_depth}, {"k", r.tree_width}, {"N", r.budget}}},
                          {"drafted", r.drafted},
                          {"committed", r.committed},
                          {"alpha", r.alpha},
                          {"first_cell", r.first_cell},
                          {"cum_tokens", r.cum_tokens},
                          {"target_forwards", r.target_forwards},
                          {"relaxed", r.relaxed},
                          {"accepted", {{"head", r.accepted_head}, {"guess", r.accepted_guess}}},
                          {"time_ms",
                           {{"draft", r.t_draft_ms},
                            {"verify", r.t_verify_ms},
                            {"sample", r.t_sample_ms},
                            {"other", r.t_other_ms}}}};
  if (!r.cells.empty()) j["cells"] = r.cells;
  if (r.grid > 0) j["grid"] = r.grid;
  if (r.plan_depth > 0 || r.plan_width > 0) j["plan"] = {{"d", r.plan_depth}, {"k", r.plan_width}};
  return j;
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
    s.relaxed += r.relaxed;
    s.accepted_head += r.accepted_head;
    s.accepted_guess += r.accepted_guess;
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
    reach.push_back(
        {{"depth", j},
         {"steps", depth_reach[j]},
         {"share", steps.empty() ? 0.0 : double(depth_reach[j]) / double(steps.size())}});
  }
  nlohmann::json j = {{"format", "adtree-stats"},
                      {"version", 1},
                      {"method", method},
                      {"settings", settings.to_json()},
                      {"summary", summary.to_json()},
                      {"depth_reach", reach},
                      {"grids", grids.to_json()},
                      {"steps", st}};
  if (!traces.empty()) {
    nlohmann::json tr = nlohmann::json::array();
    for (const auto& t : traces) tr.push_back(decode::to_json(t));
    j["traces"] = std::move(tr);
  }
  return j;
}

CellGrids CellGrids::from_json(const nlohmann::json& j) {
  const int64_t h = json_int<int64_t>(j.at("h"), "h"), w = json_int<int64_t>(j.at("w"), "w");
  if (h <= 0 || w <= 0 || h > 4096 || w > 4096)
    throw Error("the statistics grid has an invalid size");
  // Every grid must really hold h x w values before h x w cells are allocated: a file claiming a
  // 4096 x 4096 grid in a few bytes must not cost 400 MB (reliability.md, Fuzzing).
  // plan_depth, plan_width and origin are newer than the format: a file without them reads as 0.
  static constexpr const char* kGrids[] = {"depth",      "top1",       "accept_len",
                                           "tree_depth", "tree_width", "rank",
                                           "plan_depth", "plan_width", "origin"};
  static constexpr size_t kRequired = 6;
  for (size_t k = 0; k < std::size(kGrids); ++k) {
    const char* key = kGrids[k];
    if (k >= kRequired && !j.contains(key)) continue;
    const auto& rows = j.at(key);
    bool ok = rows.is_array() && int64_t(rows.size()) == h;
    for (size_t r = 0; ok && r < rows.size(); ++r) {
      ok = rows[r].is_array() && int64_t(rows[r].size()) == w;
    }
    if (!ok) throw Error(std::string("the statistics grid '") + key + "' does not match its size");
  }
  CellGrids g(h, w);
  auto value = [&](const char* key, int64_t r, int64_t c) -> const nlohmann::json& {
    return j.at(key).at(size_t(r)).at(size_t(c));
  };
  for (int64_t r = 0; r < h; ++r) {
    for (int64_t c = 0; c < w; ++c) {
      if (value("depth", r, c).is_null()) continue;
      CellStats s;
      s.depth = json_int<int32_t>(value("depth", r, c), "depth");
      s.top1 = value("top1", r, c).get<float>();
      s.accept_len = json_int<int32_t>(value("accept_len", r, c), "accept_len");
      s.tree_depth = json_int<int32_t>(value("tree_depth", r, c), "tree_depth");
      s.tree_width = json_int<int32_t>(value("tree_width", r, c), "tree_width");
      s.rank = json_int<int32_t>(value("rank", r, c), "rank");
      auto newer = [&](const char* key) {
        return j.contains(key) ? json_int<int32_t>(value(key, r, c), key) : 0;
      };
      s.plan_depth = newer("plan_depth");
      s.plan_width = newer("plan_width");
      const int32_t origin = newer("origin");
      if (origin < 0 || origin > 2)
        throw Error("the statistics grid 'origin' holds an unknown value");
      s.origin = TokenOrigin(origin);
      g.set(r * w + c, s);
    }
  }
  return g;
}

RunSummary RunSummary::from_json(const nlohmann::json& j) {
  RunSummary s;
  s.tokens = json_int<int64_t>(j.at("tokens"), "tokens");
  s.steps = json_int<int64_t>(j.at("steps"), "steps");
  s.target_forwards = json_int<int64_t>(j.at("target_forwards"), "target_forwards");
  s.tau = j.at("tau").get<double>();
  s.mean_drafted = j.at("mean_drafted").get<double>();
  s.relaxed = json_int<int64_t>(j, "relaxed", 0);  // files from before the field: 0
  if (j.contains("accepted")) {
    s.accepted_head = json_int<int64_t>(j.at("accepted"), "head", 0);
    s.accepted_guess = json_int<int64_t>(j.at("accepted"), "guess", 0);
  }
  s.wall_ms = j.at("wall_ms").get<double>();
  s.tokens_per_s = j.at("tokens_per_s").get<double>();
  const auto& t = j.at("time_ms");
  s.t_draft_ms = t.at("draft").get<double>();
  s.t_verify_ms = t.at("verify").get<double>();
  s.t_sample_ms = t.at("sample").get<double>();
  s.t_other_ms = t.at("other").get<double>();
  return s;
}

StepRecord step_record_from_json(const nlohmann::json& j) {
  StepRecord r;
  r.step = json_int<int64_t>(j.at("step"), "step");
  r.method = j.at("method").get<std::string>();
  const auto& t = j.at("tree");
  r.tree_depth = json_int<int64_t>(t.at("d"), "d");
  r.tree_width = json_int<int64_t>(t.at("k"), "k");
  r.budget = json_int<int64_t>(t.at("N"), "N");
  r.drafted = json_int<int64_t>(j.at("drafted"), "drafted");
  r.committed = json_int<int64_t>(j.at("committed"), "committed");
  r.alpha = j.at("alpha").get<double>();
  r.first_cell = json_int<int64_t>(j.at("first_cell"), "first_cell");
  r.cum_tokens = json_int<int64_t>(j.at("cum_tokens"), "cum_tokens");
  r.target_forwards = json_int<int64_t>(j.at("target_forwards"), "target_forwards");
  r.relaxed = json_int<int64_t>(j, "relaxed", 0);  // files from before the field: 0
  r.grid = json_int<int64_t>(j, "grid", 0);
  if (j.contains("accepted")) {  // files from before the field: 0
    r.accepted_head = json_int<int64_t>(j.at("accepted"), "head", 0);
    r.accepted_guess = json_int<int64_t>(j.at("accepted"), "guess", 0);
    if (r.accepted_head < 0 || r.accepted_guess < 0 ||
        r.accepted_head + r.accepted_guess > r.committed) {
      throw Error("a step record accepts more drafts than it commits");
    }
  }
  if (j.contains("plan")) {
    r.plan_depth = json_int<int64_t>(j.at("plan"), "d", 0);
    r.plan_width = json_int<int64_t>(j.at("plan"), "k", 0);
  }
  if (r.grid < 0 || r.grid > r.drafted)
    throw Error("a step record counts " + std::to_string(r.grid) + " grid candidates of " +
                std::to_string(r.drafted) + " drafted");
  if (j.contains("cells")) {
    r.cells = json_ints<int64_t>(j.at("cells"), "cells");
    if (int64_t(r.cells.size()) != r.committed)
      throw Error("a step record lists " + std::to_string(r.cells.size()) + " cells for " +
                  std::to_string(r.committed) + " committed tokens");
  }
  const auto& tm = j.at("time_ms");
  r.t_draft_ms = tm.at("draft").get<double>();
  r.t_verify_ms = tm.at("verify").get<double>();
  r.t_sample_ms = tm.at("sample").get<double>();
  r.t_other_ms = tm.at("other").get<double>();
  if (r.committed < 0 || r.first_cell < 0) throw Error("a step record has negative counts");
  return r;
}

RunStats RunStats::from_json(const nlohmann::json& j) {
  RunStats s;
  try {
    if (!j.is_object() || j.value("format", "") != "adtree-stats") {
      throw Error("not an ADT-Tree statistics file (no \"format\": \"adtree-stats\")");
    }
    if (json_int<int>(j.at("version"), "version") != 1) {
      throw Error("unsupported statistics version");
    }
    s.method = j.at("method").get<std::string>();
    s.settings = RunSettings::from_json(j.at("settings"));
    s.grids = CellGrids::from_json(j.at("grids"));
    // add_step sizes depth_reach by `committed` and counts up to it: bound the steps by the grid
    // first (a few bytes claiming 10^15 committed tokens). A run never commits
    // more tokens than the grid has cells.
    const int64_t cells = s.grids.h() * s.grids.w();
    int64_t total = 0;
    for (const auto& r : j.at("steps")) {
      const StepRecord step = step_record_from_json(r);
      if (step.committed > cells - total || step.first_cell > cells) {
        throw Error("the run's steps commit more tokens than its grid has cells");
      }
      total += step.committed;
      s.add_step(step);
    }
    s.summary = RunSummary::from_json(j.at("summary"));
    if (j.contains("traces")) {
      for (const auto& t : j.at("traces")) s.traces.push_back(step_trace_from_json(t));
      if (s.traces.size() != s.steps.size()) throw Error("the run has a trace for some steps only");
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("invalid statistics: ") + e.what());
  }
  return s;
}

std::vector<int64_t> run_tokens_from_json(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("tokens")) throw Error("the run has no tokens");
  try {
    return json_ints<int64_t>(j.at("tokens"), "tokens");
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("the run's tokens are not a list of integers: ") + e.what());
  }
}

void validate_run(const RunStats& stats, const std::vector<int64_t>& tokens) {
  const int64_t cells = stats.grids.h() * stats.grids.w();
  if (int64_t(tokens.size()) > cells) {
    throw Error("the run has more tokens than its grid has cells");
  }
  // Steps that list their cells (PJD) may commit anywhere, each cell once; a cancelled run then
  // keeps the raster prefix of what it committed. The others continue where the last one ended.
  int64_t committed = 0;
  bool listed = false;
  std::vector<uint8_t> seen(size_t(cells), 0);
  for (const auto& st : stats.steps) {
    listed = listed || !st.cells.empty();
    if (!listed && st.first_cell != committed)
      throw Error("the run's steps do not follow each other");
    for (int64_t i = 0; i < st.committed; ++i) {
      const int64_t c = st.cell(size_t(i));
      if (c < 0 || c >= cells || seen[size_t(c)]) throw Error("a step commits a cell twice");
      seen[size_t(c)] = 1;
    }
    committed += st.committed;
  }
  if (listed) {
    for (size_t c = 0; c < tokens.size(); ++c)
      if (!seen[c]) throw Error("the run's steps and tokens disagree");
  } else if (committed != int64_t(tokens.size())) {
    throw Error("the run's steps and tokens disagree");
  }
}

}  // namespace adtree::decode
