// adtree bench on a vector-token model, continuous family or MAR (issue "CSpD", part 5; issue
// "MAR checkpoints"): every method on the same
// pictures (prompts x seeds x rounds, the methods in turn per picture), the time split into draft
// backbone, draft head, target backbone, target head and resampling, CSpD's acceptance and tokens
// per round, and the speed-up over AR as the median of paired ratios.
#include <algorithm>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>

#include "commands.h"
#include "decode/settings/method_table.h"
#include "decode/stats/position_acceptance.h"
#include "io/file_write.h"
#include "util/error.h"
#include "util/threads.h"
#include "vector_family.h"

namespace adtree::cli {

namespace {

using json = nlohmann::json;

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The CPU as lscpu names it: model name, family and model (/proc/cpuinfo).
json cpu_json() {
  std::ifstream f("/proc/cpuinfo");
  json j = json::object();
  std::string line;
  while (std::getline(f, line) && j.size() < 3) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    auto key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    const auto value = line.substr(std::min(line.size(), colon + 2));
    if (key == "model name" || key == "cpu family" || key == "model") j[key] = value;
  }
  return j;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, sep);)
    if (!item.empty()) out.push_back(item);
  return out;
}

struct MethodRuns {
  std::string name;
  decode::DecodeRequest request;
  std::vector<double> total_ms, ratio_to_ar, acceptance, tau;
  decode::ContinuousTiming sum;
  decode::PositionAcceptance positions;
};

json summary_of(const MethodRuns& r) {
  const double n = std::max<double>(1.0, double(r.total_ms.size()));
  const auto& s = r.sum;
  json j{{"method", r.name},
         {"pictures", r.total_ms.size()},
         {"median_ms", median(r.total_ms)},
         {"speedup_vs_ar", median(r.ratio_to_ar)},
         {"mean_split_ms",
          {{"draft_backbone", s.draft_backbone / n},
           {"draft_head", s.draft_head / n},
           {"target_backbone", s.target_backbone / n},
           {"target_head", s.target_head / n},
           {"resample", s.resample / n}}}};
  if (r.request.method.method == decode::Method::Cspd) {
    const auto& c = r.request.method.cspd;  // what this entry ran (its own @ settings included)
    j["cspd"] = {{"gamma", c.gamma},
                 {"prefill_ratio", c.prefill_ratio},
                 {"inner_temperature", c.inner_temperature}};
    j["acceptance_by_position"] = r.positions.rates();
    j["mean_acceptance"] = std::accumulate(r.acceptance.begin(), r.acceptance.end(), 0.0) / n;
    j["mean_tokens_per_round"] = std::accumulate(r.tau.begin(), r.tau.end(), 0.0) / n;
  }
  return j;
}

void print_row(const json& s) {
  // An entry with settings of its own has a long name: it gets a line of its own.
  const auto name = s["method"].get<std::string>();
  if (name.size() > 6) std::printf("%s\n", name.c_str());
  std::printf(
      "%-6s %8.0f ms  x%.2f vs AR  split ms: draft %6.0f + %6.0f, target %6.0f + %6.0f, "
      "resample %4.0f",
      name.size() > 6 ? "" : name.c_str(), s["median_ms"].get<double>(),
      s["speedup_vs_ar"].get<double>(), s["mean_split_ms"]["draft_backbone"].get<double>(),
      s["mean_split_ms"]["draft_head"].get<double>(),
      s["mean_split_ms"]["target_backbone"].get<double>(),
      s["mean_split_ms"]["target_head"].get<double>(),
      s["mean_split_ms"]["resample"].get<double>());
  if (s.contains("mean_acceptance")) {
    std::printf("  alpha %.3f, tau %.2f, by position", s["mean_acceptance"].get<double>(),
                s["mean_tokens_per_round"].get<double>());
    for (const auto& rate : s["acceptance_by_position"]) std::printf(" %.2f", rate.get<double>());
  }
  std::printf("\n");
}

template <class Bundle>
int bench_vectors(const Args& a, const std::string& dir, const Bundle& m) {
  const auto names = split(a.given("method") ? a.str("method") : "ar,cspd", ',');
  std::vector<MethodRuns> runs;
  for (const auto& n : names) {
    // An entry may carry method settings of its own: "cspd@cspd-gamma=2@cspd-inner-temperature=100"
    // (several CSpD settings against one AR in one run). No rules or heads: CSpD has one of each.
    auto overrides = split(n, '@');
    if (overrides.at(0).find(':') != std::string::npos)
      throw Error(
          "a vector-token model's bench takes method names (ar, cspd) with @FLAG=VALUE "
          "settings, no :RULE: '" +
          n + "'");
    auto r = default_request(m, decode::method_from_string(overrides.at(0)));
    apply_given_settings(a, r);
    for (size_t i = 1; i < overrides.size(); ++i) apply_method_flag(overrides[i], r);
    check_request(m, r);
    runs.push_back({n, r, {}, {}, {}, {}, {}, {}});
  }
  const auto prompts = a.given("prompts") ? split(a.str("prompts"), ';') : sample_prompts(m);
  const int64_t seeds = a.integer("seeds"), rounds = a.integer("rounds");
  if (seeds < 1 || rounds < 1) throw Error("--seeds and --rounds need at least 1");
  // A first picture untimed: page faults, the worker pool and the caches warm up.
  run_vectors(m, prompts[0], default_request(m, decode::Method::Ar));
  json pictures = json::array();
  for (int64_t round = 0; round < rounds; ++round) {
    for (const auto& prompt : prompts) {
      for (int64_t seed = 0; seed < seeds; ++seed) {
        double ar_ms = 0;
        for (auto& r : runs) {
          r.request.seed = uint64_t(seed);
          const auto res = run_vectors(m, prompt, r.request);
          const double ms = res.timing.total;
          if (r.request.method.method == decode::Method::Ar) ar_ms = ms;
          r.total_ms.push_back(ms);
          if (ar_ms > 0) r.ratio_to_ar.push_back(ar_ms / ms);
          r.acceptance.push_back(res.acceptance());
          r.tau.push_back(res.tokens_per_round());
          r.sum.draft_backbone += res.timing.draft_backbone;
          r.sum.draft_head += res.timing.draft_head;
          r.sum.target_backbone += res.timing.target_backbone;
          r.sum.target_head += res.timing.target_head;
          r.sum.resample += res.timing.resample;
          r.positions.add(decode::position_acceptance(res.stats));
          json p = decode::to_json(res, false);
          p["method"] = r.name, p["prompt"] = prompt, p["seed"] = seed, p["round"] = round;
          pictures.push_back(p);
        }
      }
    }
  }
  auto model_json = shapes_json(m);
  model_json["dir"] = dir;
  json out{{"family", family(m)},
           {"model", model_json},
           {"machine", {{"cpu", cpu_json()}, {"threads", worker_threads()}}},
           {"prompts", prompts},
           {"seeds", seeds},
           {"rounds", rounds},
           {"pictures", pictures},
           {"summary", json::array()}};
  std::printf("%s: %zu prompts x %lld seeds x %lld rounds, %d threads\n", dir.c_str(),
              prompts.size(), (long long)seeds, (long long)rounds, worker_threads());
  for (const auto& r : runs) {
    out["summary"].push_back(summary_of(r));
    print_row(out["summary"].back());
  }
  if (a.given("json")) io::write_file(a.str("json"), out.dump(2) + "\n", "the results");
  return 0;
}

}  // namespace

int bench_continuous(const Args& a, const std::string& dir) {
  if (model::is_mar_dir(dir))
    return bench_vectors(a, dir, model::load_mar_dir(dir, true, a.str("dtype")));
  return bench_vectors(a, dir, model::load_continuous_dir(dir));
}

}  // namespace adtree::cli
