#include "bench_breakdown.h"

#include <algorithm>
#include <iomanip>

namespace adtree::cli {

namespace {
std::string shape_of(const decode::StepRecord& r) {
  if (r.drafted == 0) return "no draft";
  std::string s = std::to_string(r.tree_depth) + "x" + std::to_string(r.tree_width) + " N" +
                  std::to_string(r.drafted - r.grid);
  if (r.grid > 0) s += "+g" + std::to_string(r.grid);
  return s;
}

// The `n` most used shapes, "shape share%" separated by commas.
std::string top_shapes(const Breakdown& b, size_t n) {
  std::vector<std::pair<int64_t, std::string>> v;
  for (const auto& [shape, count] : b.shapes) v.emplace_back(count, shape);
  std::sort(v.rbegin(), v.rend());
  std::string out;
  for (size_t i = 0; i < std::min(n, v.size()); ++i) {
    const int pct = int(100.0 * double(v[i].first) / double(std::max<int64_t>(1, b.steps)) + 0.5);
    out += (i ? ", " : "") + v[i].second + " " + std::to_string(pct) + "%";
  }
  return out;
}
}  // namespace

double Breakdown::head_share() const {
  return double(accepted_head) / double(std::max<int64_t>(1, accepted_head + accepted_guess));
}

void Breakdown::add(const decode::RunStats& stats) {
  for (const auto& r : stats.steps) {
    draft_ms += r.t_draft_ms, verify_ms += r.t_verify_ms;
    sample_ms += r.t_sample_ms, other_ms += r.t_other_ms;
    ++steps, grid += r.grid, drafted += r.drafted;
    accepted_head += r.accepted_head, accepted_guess += r.accepted_guess;
    ++shapes[shape_of(r)];
  }
}

nlohmann::json Breakdown::to_json() const {
  const double total = std::max(1e-9, draft_ms + verify_ms + sample_ms + other_ms);
  return {{"share",
           {{"draft", draft_ms / total},
            {"verify", verify_ms / total},
            {"sample", sample_ms / total},
            {"other", other_ms / total}}},
          {"ms_per_step",
           {{"draft", draft_ms / double(std::max<int64_t>(1, steps))},
            {"verify", verify_ms / double(std::max<int64_t>(1, steps))},
            {"sample", sample_ms / double(std::max<int64_t>(1, steps))},
            {"other", other_ms / double(std::max<int64_t>(1, steps))}}},
          {"grid_share_of_drafted", double(grid) / double(std::max<int64_t>(1, drafted))},
          {"accepted", {{"head", accepted_head}, {"guess", accepted_guess}}},
          {"head_share_of_accepted", head_share()},
          {"shapes", shapes}};
}

void print_breakdowns(std::ostream& os, const std::vector<std::string>& methods,
                      const std::map<std::string, Breakdown>& b) {
  os << "\nwhere the time goes (share of step time)  draft  verify  sample   other   grid   "
        "head  shapes (d x k, N drafted, +g grid)\n";
  for (const auto& m : methods) {
    const auto it = b.find(m);
    if (it == b.end()) continue;
    const auto j = it->second.to_json();
    const auto& s = j["share"];
    os << "  " << std::left << std::setw(39) << m << std::right << std::fixed
       << std::setprecision(2) << std::setw(6) << s["draft"].get<double>() << std::setw(8)
       << s["verify"].get<double>() << std::setw(8) << s["sample"].get<double>() << std::setw(8)
       << s["other"].get<double>() << std::setw(7) << j["grid_share_of_drafted"].get<double>()
       << std::setw(7) << j["head_share_of_accepted"].get<double>() << "  "
       << top_shapes(it->second, 4) << "\n";
  }
  os << "  (grid: free candidates' share of the drafted tokens; head: the draft head's share of "
        "the accepted drafted tokens, the rest free guesses)\n";
}

}  // namespace adtree::cli
