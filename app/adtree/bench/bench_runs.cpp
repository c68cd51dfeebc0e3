#include "bench_runs.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

#include "bench_forward.h"
#include "decode/run.h"
#include "model/prompt_condition.h"
#include "util/error.h"

namespace adtree::cli {

namespace {
double median_step_ms(const decode::RunStats& stats) {
  std::vector<double> ms;
  for (const auto& r : stats.steps)
    ms.push_back(r.t_draft_ms + r.t_verify_ms + r.t_sample_ms + r.t_other_ms);
  return median(ms);
}

void add_run(MethodRuns& g, const decode::RunStats& stats, double step_ms, double ar_wall) {
  const auto& su = stats.summary;
  g.wall.push_back(su.wall_ms);
  g.step.push_back(step_ms);
  g.ratio.push_back(su.wall_ms > 0 ? ar_wall / su.wall_ms : 0);
  g.tokens += double(su.tokens);
  g.forwards += double(su.target_forwards);
  g.drafted += su.mean_drafted * double(su.steps);
  g.steps += double(su.steps);
  g.forward_ms += su.t_draft_ms + su.t_verify_ms;
  g.total_ms += su.wall_ms;
  g.breakdown.add(stats);
}
}  // namespace

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto i = size_t(std::clamp(q, 0.0, 1.0) * double(v.size() - 1) + 0.5);
  return v[i];
}

BenchRuns run_generations(const model::ModelBundle& m, const std::vector<BenchMethod>& methods,
                          const std::vector<std::string>& prompts, int64_t seeds, int64_t rounds) {
  if (methods.empty() || methods[0].request.method.method != decode::Method::Ar) {
    throw Error("run_generations: AR must come first, as the baseline");
  }
  BenchRuns out;
  for (int64_t round = 0; round < rounds; ++round) {
    for (const auto& prompt : prompts) {
      const auto cond =
          model::condition_for_prompt(m, prompt, methods[0].request.sampling.uses_cfg());
      for (int64_t seed = 0; seed < seeds; ++seed) {
        double ar_wall = 0;
        for (const auto& bm : methods) {
          auto req = bm.request;
          req.seed = uint64_t(seed);
          const auto res = decode::run_decode(m, cond, req);
          const double step_ms = median_step_ms(res.stats);
          if (&bm == &methods[0]) ar_wall = res.stats.summary.wall_ms;
          add_run(out.by_method[bm.name], res.stats, step_ms, ar_wall);
          out.runs.push_back({{"method", bm.name},
                              {"verify", res.stats.settings.verify},
                              {"prompt", prompt},
                              {"seed", seed},
                              {"round", round},
                              {"summary", res.stats.summary.to_json()},
                              {"median_step_ms", step_ms},
                              {"depth_reach", res.stats.to_json()["depth_reach"]}});
        }
      }
    }
  }
  return out;
}

nlohmann::json print_summary(std::ostream& os, const BenchRuns& runs,
                             const std::vector<std::string>& names, int64_t image_tokens,
                             double floor_ms) {
  os << "\nmethod                 tau  drafted/step  target fwd   wall ms  tokens/s  speed-up "
        "(quartiles)  outside fwd  ms/step\n";
  nlohmann::json summary = nlohmann::json::object();
  std::map<std::string, Breakdown> breakdown;
  for (const auto& name : names) {
    const auto& g = runs.by_method.at(name);
    const double n = double(g.wall.size());
    const double wall = median(g.wall), step = median(g.step), speedup = median(g.ratio);
    const double q1 = quantile(g.ratio, 0.25), q3 = quantile(g.ratio, 0.75);
    const double tau = g.forwards > 0 ? g.tokens / g.forwards : 0;
    const double drafted = g.steps > 0 ? g.drafted / g.steps : 0;
    const double outside = g.total_ms > 0 ? 1.0 - g.forward_ms / g.total_ms : 0;
    const double tps = 1000.0 * double(image_tokens) / wall;
    summary[name] = {{"tau", tau},
                     {"drafted_per_step", drafted},
                     {"target_forwards_per_run", g.forwards / n},
                     {"median_wall_ms", wall},
                     {"tokens_per_s", tps},
                     {"speedup_vs_ar", speedup},
                     {"speedup_quartiles", {q1, q3}},
                     {"runs", g.wall.size()},
                     {"share_outside_forwards", outside},
                     {"median_step_ms", step},
                     {"step_over_floor", step / floor_ms},
                     {"breakdown", g.breakdown.to_json()}};
    std::ostringstream quart;
    quart << std::fixed << std::setprecision(2) << "(" << q1 << "-" << q3 << ")";
    os << std::left << std::setw(20) << name << std::right << std::setw(6) << tau << std::setw(14)
       << drafted << std::setw(12) << g.forwards / n << std::setw(10) << wall << std::setw(10)
       << tps << std::setw(10) << speedup << std::setw(12) << quart.str() << std::setw(13)
       << outside << std::setw(9) << step << "\n";
    breakdown[name] = g.breakdown;
  }
  print_breakdowns(os, names, breakdown);
  return summary;
}

}  // namespace adtree::cli
