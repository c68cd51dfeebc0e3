#include "research/sweep.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <map>
#include <ostream>
#include <set>
#include <sstream>

#include "decode/likelihood.h"
#include "decode/run.h"
#include "decode/settings/method_table.h"
#include "model/prompt_condition.h"
#include "util/error.h"
#include "util/number_text.h"

namespace adtree::research {

namespace {

// Applies one axis value to every point so far: the cartesian product, axis by axis.
template <typename T, typename F>
void axis(std::vector<SweepPoint>& pts, const std::vector<T>& values, F apply) {
  if (values.empty()) return;
  std::vector<SweepPoint> out;
  for (const auto& p : pts) {
    for (const auto& v : values) {
      SweepPoint q = p;
      apply(q, v);
      out.push_back(std::move(q));
    }
  }
  pts = std::move(out);
}

void add_label(SweepPoint& p, const std::string& part) {
  p.label += " " + part;
}

}  // namespace

nlohmann::json SweepPoint::to_json() const {
  return {{"label", label}, {"method", method.to_json()}, {"sampling", sampling.to_json()}};
}

std::vector<SweepPoint> expand(const SweepGrid& g) {
  if (g.methods.empty()) throw Error("a sweep needs at least one method");
  std::vector<SweepPoint> pts;
  for (const auto& m : g.methods) {
    SweepPoint p;
    p.method = g.base;
    p.method.method = decode::method_from_string(m);
    p.sampling = g.sampling;
    p.label = m;
    pts.push_back(p);
  }
  // Each axis only touches (and labels) the methods that read it; the rest pass through
  // unchanged, and the duplicates that makes are removed below.
  for (const auto& s : decode::settings_table()) {
    const auto it = g.axes.find(s.key);
    if (it == g.axes.end()) continue;
    axis(pts, it->second, [&s](SweepPoint& p, const decode::SettingValue& v) {
      if (!s.read_by(p.method)) return;
      decode::DecodeRequest r{p.method, p.sampling, 0, {}};
      s.set(r, v);
      p.method = r.method;
      p.sampling = r.sampling;
      add_label(p, s.sweep_label + "=" + s.format(v));
    });
  }
  for (auto& p : pts) {  // ADT's first tree stays inside swept bounds
    if (p.method.method != decode::Method::Adt) continue;
    auto& a = p.method.adt;
    a.d0 = std::max(a.d_min, std::min(a.d0, a.d_max));
    a.k0 = std::max(a.k_min, std::min(a.k0, a.k_max));
  }
  // One run per distinct setting, in first-seen order.
  std::vector<SweepPoint> out;
  std::set<std::string> seen;
  for (auto& p : pts) {
    if (seen.insert(p.method.to_json().dump() + p.sampling.to_json().dump()).second) {
      out.push_back(std::move(p));
    }
  }
  return out;
}

Shard Shard::parse(const std::string& s) {
  Shard sh;
  const auto slash = s.find('/');
  try {
    if (slash == std::string::npos) throw std::invalid_argument("no slash");
    size_t used = 0;
    sh.index = std::stoll(s.substr(0, slash), &used);
    if (used != slash) throw std::invalid_argument("index");
    const std::string rest = s.substr(slash + 1);
    sh.count = std::stoll(rest, &used);
    if (used != rest.size()) throw std::invalid_argument("count");
  } catch (const std::exception&) {
    throw Error("--shard must look like i/n (e.g. 0/4), got '" + s + "'");
  }
  if (sh.count < 1 || sh.index < 0 || sh.index >= sh.count) {
    throw Error("--shard i/n needs 0 <= i < n, got '" + s + "'");
  }
  return sh;
}

std::string row_key(const nlohmann::json& row) {
  return row.at("label").get<std::string>() + "|" + row.at("prompt").get<std::string>() + "|" +
         std::to_string(row.at("seed").get<uint64_t>());
}

namespace {

struct ArBaseline {
  double wall_ms = 0, nll = 0;
  std::vector<int64_t> tokens;
};

nlohmann::json make_row(const SweepPoint& p, const std::string& prompt, uint64_t seed,
                        const decode::DecodeResult& res, double nll, const ArBaseline& ar,
                        const Shard& shard) {
  const auto& s = res.stats.summary;
  const bool lossless = res.stats.settings.lossless;
  nlohmann::json row = {{"label", p.label},
                        {"method", decode::to_string(p.method.method)},
                        {"prompt", prompt},
                        {"seed", seed},
                        {"temperature", p.sampling.temperature},
                        {"lossless", lossless},
                        {"tau", s.tau},
                        {"mean_drafted", s.mean_drafted},
                        {"target_forwards", s.target_forwards},
                        {"steps", s.steps},
                        {"tokens", s.tokens},
                        {"wall_ms", s.wall_ms},
                        {"ar_wall_ms", ar.wall_ms},
                        {"speedup", s.wall_ms > 0 ? ar.wall_ms / s.wall_ms : 0.0},
                        {"nll", nll},
                        {"ar_nll", ar.nll},
                        {"nll_delta", nll - ar.nll},
                        {"identical_to_ar", res.tokens == ar.tokens},
                        {"setting", p.to_json()},
                        {"shard", std::to_string(shard.index) + "/" + std::to_string(shard.count)}};
  return row;
}

}  // namespace

namespace {

// Every point checked before the first (long) run, named by its label.
void check_points(const model::ModelBundle& model, const std::vector<SweepPoint>& points) {
  for (const auto& p : points) {
    decode::DecodeRequest r;
    r.method = p.method;
    r.sampling = p.sampling;
    try {
      decode::check_request(model, r);
    } catch (const Error& e) {
      throw Error("'" + p.label + "': " + e.what());
    }
  }
}

// The units of one process: its caches (conditions, AR baselines) and where rows go.
class SweepRunner {
 public:
  SweepRunner(const model::ModelBundle& model, const SweepOptions& opts,
              const std::function<void(const nlohmann::json&)>& row, std::ostream* log)
      : model_(model), opts_(opts), row_(row), log_(log) {}

  void run_unit(const SweepPoint& p, const std::string& prompt, uint64_t seed, int64_t unit) {
    const auto& cond = condition(prompt, p.sampling);
    const auto& ar = ar_baseline(prompt, seed, cond, p.sampling);
    auto res = run(p.method, p.sampling, seed, cond);
    const double nll = decode::sequence_nll(*model_.gpt, cond, res.tokens, p.sampling);
    auto r = make_row(p, prompt, seed, res, nll, ar, opts_.shard);
    if (log_) {
      *log_ << std::fixed << std::setprecision(2) << "[" << unit << "] " << p.label << " | "
            << prompt << " | seed " << seed << ": tau " << r["tau"].get<double>() << ", drafted "
            << r["mean_drafted"].get<double>() << ", speed-up " << r["speedup"].get<double>()
            << "\n";
    }
    row_(r);
    if (opts_.match_drafted && p.method.method == decode::Method::Adt)
      run_matched(p, prompt, seed, res.stats.summary.mean_drafted, cond, ar);
  }

  bool skipped(const std::string& label, const std::string& prompt, uint64_t seed) const {
    return skip_.count(label + "|" + prompt + "|" + std::to_string(seed)) > 0;
  }

 private:
  decode::DecodeResult run(const decode::MethodSettings& m, const decode::SamplingParams& sp,
                           uint64_t seed, const model::Condition& cond) const {
    decode::DecodeRequest req;
    req.method = m;
    req.sampling = sp;
    req.seed = seed;
    return decode::run_decode(model_, cond, req);
  }

  // One condition per prompt and CFG on/off, not one per unit.
  const model::Condition& condition(const std::string& prompt, const decode::SamplingParams& sp) {
    auto key = std::make_pair(prompt, sp.uses_cfg());
    auto it = conds_.find(key);
    if (it == conds_.end()) {
      auto c = model::condition_for_prompt(model_, prompt, sp.uses_cfg());
      it = conds_.emplace(key, std::move(c)).first;
    }
    return it->second;
  }

  // AR on the same prompt, seed and sampling, once per process: the speed-up's and the
  // likelihood's reference.
  const ArBaseline& ar_baseline(const std::string& prompt, uint64_t seed,
                                const model::Condition& cond, const decode::SamplingParams& sp) {
    const std::string key = prompt + "|" + std::to_string(seed) + "|" + sp.to_json().dump();
    auto it = ar_cache_.find(key);
    if (it != ar_cache_.end()) return it->second;
    decode::MethodSettings ar_method;
    auto ar = run(ar_method, sp, seed, cond);
    ArBaseline b;
    b.wall_ms = ar.stats.summary.wall_ms;
    b.nll = decode::sequence_nll(*model_.gpt, cond, ar.tokens, sp);
    b.tokens = ar.tokens;
    return ar_cache_.emplace(key, std::move(b)).first->second;
  }

  // EAGLE-2 at equal mean draft size: its budget N set to what ADT-Tree drafted per step here, on
  // the same prompt and seed (its D and K stay EAGLE-2's defaults).
  void run_matched(const SweepPoint& p, const std::string& prompt, uint64_t seed,
                   double mean_drafted, const model::Condition& cond, const ArBaseline& ar) {
    SweepPoint q = p;
    q.method.method = decode::Method::Dynamic;
    q.method.dynamic_tree.budget = std::max<int64_t>(1, std::llround(mean_drafted));
    q.label = "dynamic@drafted-of(" + p.label + ")";
    if (skipped(q.label, prompt, seed)) return;
    auto dyn = run(q.method, q.sampling, seed, cond);
    const double dn = decode::sequence_nll(*model_.gpt, cond, dyn.tokens, q.sampling);
    auto dr = make_row(q, prompt, seed, dyn, dn, ar, opts_.shard);
    dr["matched_budget"] = q.method.dynamic_tree.budget;
    if (log_) {
      *log_ << "      " << q.label << ": N " << q.method.dynamic_tree.budget << ", tau "
            << dr["tau"].get<double>() << ", speed-up " << dr["speedup"].get<double>() << "\n";
    }
    row_(dr);
  }

  const model::ModelBundle& model_;
  const SweepOptions& opts_;
  const std::function<void(const nlohmann::json&)>& row_;
  std::ostream* log_;
  const std::set<std::string> skip_{opts_.skip_keys.begin(), opts_.skip_keys.end()};
  std::map<std::string, ArBaseline> ar_cache_;
  std::map<std::pair<std::string, bool>, model::Condition> conds_;
};

}  // namespace

void run_sweep(const model::ModelBundle& model, const std::vector<SweepPoint>& points,
               const SweepOptions& opts, const std::function<void(const nlohmann::json&)>& row,
               std::ostream* log) {
  if (opts.prompts.empty()) throw Error("a sweep needs at least one prompt");
  if (opts.seeds < 1) throw Error("--seeds must be at least 1");
  check_points(model, points);
  SweepRunner runner(model, opts, row, log);
  int64_t unit = -1;  // units in a fixed order, so that shards partition them
  for (const auto& prompt : opts.prompts) {
    for (int64_t s = 0; s < opts.seeds; ++s) {
      for (const auto& p : points) {
        ++unit;
        const uint64_t seed = uint64_t(s);
        if (!opts.shard.owns(unit) || runner.skipped(p.label, prompt, seed)) continue;
        runner.run_unit(p, prompt, seed, unit);
      }
    }
  }
}

std::vector<nlohmann::json> read_jsonl(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("cannot read " + path);
  std::vector<nlohmann::json> rows;
  std::string line;
  int64_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      auto j = nlohmann::json::parse(line);
      row_key(j);  // has label, prompt, seed
      rows.push_back(std::move(j));
    } catch (const std::exception& e) {
      throw Error(path + " line " + std::to_string(n) + " is not a sweep row: " + e.what());
    }
  }
  return rows;
}

std::vector<nlohmann::json> merge_rows(const std::vector<std::vector<nlohmann::json>>& shards) {
  std::map<std::string, nlohmann::json> by_key;
  for (const auto& rows : shards) {
    for (const auto& r : rows) by_key[row_key(r)] = r;
  }
  std::vector<nlohmann::json> out;
  for (auto& [k, r] : by_key) out.push_back(std::move(r));
  return out;
}

std::vector<nlohmann::json> summarize(const std::vector<nlohmann::json>& rows) {
  struct Acc {
    int64_t n = 0, greedy = 0, identical = 0;
    double tau = 0, drafted = 0, speedup = 0, smin = 1e300, smax = 0, dnll = 0, nll = 0;
    bool lossless = true;
    std::string method;
    double temperature = 0;
  };
  std::map<std::string, Acc> acc;
  std::vector<std::string> order;
  for (const auto& r : rows) {
    const std::string label = r.at("label");
    if (!acc.count(label)) order.push_back(label);
    auto& a = acc[label];
    ++a.n;
    a.method = r.at("method");
    a.temperature = r.at("temperature");
    a.lossless = a.lossless && r.at("lossless").get<bool>();
    a.tau += r.at("tau").get<double>();
    a.drafted += r.at("mean_drafted").get<double>();
    const double sp = r.at("speedup").get<double>();
    a.speedup += sp;
    a.smin = std::min(a.smin, sp);
    a.smax = std::max(a.smax, sp);
    a.nll += r.at("nll").get<double>();
    a.dnll += r.at("nll_delta").get<double>();
    if (r.at("temperature").get<double>() <= 0) {
      ++a.greedy;
      a.identical += r.at("identical_to_ar").get<bool>() ? 1 : 0;
    }
  }
  std::vector<nlohmann::json> out;
  for (const auto& label : order) {
    const auto& a = acc[label];
    const double n = double(a.n);
    nlohmann::json j = {{"label", label},
                        {"method", a.method},
                        {"temperature", a.temperature},
                        {"runs", a.n},
                        {"lossless", a.lossless},
                        {"tau", a.tau / n},
                        {"mean_drafted", a.drafted / n},
                        {"speedup", a.speedup / n},
                        {"speedup_min", a.smin},
                        {"speedup_max", a.smax},
                        {"nll", a.nll / n},
                        {"nll_delta", a.dnll / n}};
    if (a.greedy > 0) j["identical_to_ar"] = double(a.identical) / double(a.greedy);
    out.push_back(std::move(j));
  }
  return out;
}

std::string markdown_table(const std::vector<nlohmann::json>& summary) {
  std::ostringstream s;
  s << "| setting | runs | tau | drafted/step | speed-up vs AR (min-max) | NLL - AR NLL | greedy = "
       "AR |\n"
    << "|---|---:|---:|---:|---|---:|---:|\n";
  s << std::fixed;
  for (const auto& r : summary) {
    s << "| " << r.at("label").get<std::string>()
      << (r.at("lossless").get<bool>() ? "" : " (lossy)") << " | " << r.at("runs").get<int64_t>()
      << " | " << std::setprecision(2) << r.at("tau").get<double>() << " | " << std::setprecision(1)
      << r.at("mean_drafted").get<double>() << " | " << std::setprecision(2)
      << r.at("speedup").get<double>() << "x (" << r.at("speedup_min").get<double>() << "-"
      << r.at("speedup_max").get<double>() << ") | " << std::showpos << std::setprecision(3)
      << r.at("nll_delta").get<double>() << std::noshowpos << " | ";
    if (r.contains("identical_to_ar")) {
      s << std::setprecision(0) << 100.0 * r.at("identical_to_ar").get<double>() << "%";
    } else {
      s << "-";
    }
    s << " |\n";
  }
  return s.str();
}

}  // namespace adtree::research
