#include "decode/tree/step_cost.h"

#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <tuple>

#include "model/conditioning.h"
#include "util/clock.h"
#include "util/error.h"

namespace adtree::decode {

namespace {
using Curve = std::vector<std::pair<int64_t, double>>;

double interpolate(const Curve& c, int64_t rows) {
  if (c.empty()) return 0;
  if (c.size() == 1) return c[0].second * double(rows) / double(c[0].first);
  size_t hi = 1;
  while (hi + 1 < c.size() && c[hi].first < rows) ++hi;
  const auto& [x0, y0] = c[hi - 1];
  const auto& [x1, y1] = c[hi];
  const double t = double(rows - x0) / double(x1 - x0);
  // Below the first point: no cheaper than it (a block never costs less than one row).
  return std::max(rows <= x0 ? y0 : 0.0, y0 + t * (y1 - y0));
}

Curve curve_from(const nlohmann::json& j, const std::string& key, const std::string& what) {
  if (!j.contains(key) || !j[key].is_array() || j[key].empty())
    throw Error(what + ": \"" + key + "\" must be a non-empty list of [rows, ms] pairs");
  Curve c;
  for (const auto& p : j[key]) {
    if (!p.is_array() || p.size() != 2 || !p[0].is_number_integer() || !p[1].is_number())
      throw Error(what + ": every entry of \"" + key + "\" must be [rows, ms]");
    const int64_t rows = p[0].get<int64_t>();
    const double ms = p[1].get<double>();
    if (rows < 1 || !std::isfinite(ms) || ms <= 0)
      throw Error(what + ": \"" + key + "\" needs rows >= 1 and finite ms > 0, got [" +
                  std::to_string(rows) + ", " + p[1].dump() + "]");
    if (!c.empty() && rows <= c.back().first)
      throw Error(what + ": \"" + key + "\" must list rows in ascending order");
    c.emplace_back(rows, ms);
  }
  return c;
}

double median_ms(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Medians of interleaved rounds: every size is timed once per round, after a warm-up round, so a
// slow spell of the machine (another process, a frequency change) touches every size alike instead
// of bending the curve where it happened to fall.
template <class Run>
std::vector<double> timed_rounds(const std::vector<int64_t>& sizes, Run run) {
  constexpr int kRounds = 9;
  std::vector<std::vector<double>> ms(sizes.size());
  for (int r = -1; r < kRounds; ++r) {
    for (size_t i = 0; i < sizes.size(); ++i) {
      const auto t0 = Clock::now();
      run(sizes[i]);
      const double t = ms_since(t0);
      if (r >= 0) ms[i].push_back(t);
    }
  }
  std::vector<double> out;
  for (auto& m : ms) out.push_back(median_ms(m));
  return out;
}
}  // namespace

double StepCosts::verify(int64_t rows) const {
  return interpolate(verify_ms, rows);
}
double StepCosts::head(int64_t rows) const {
  return interpolate(head_ms, rows);
}

nlohmann::json StepCosts::to_json() const {
  return {
      {"verify_ms", verify_ms}, {"head_ms", head_ms}, {"one_call", one_call}, {"source", source}};
}

StepCosts StepCosts::from_json(const nlohmann::json& j, const std::string& what) {
  if (!j.is_object()) throw Error(what + ": a cost curve is a JSON object");
  StepCosts c;
  c.verify_ms = curve_from(j, "verify_ms", what);
  c.head_ms = curve_from(j, "head_ms", what);
  if (j.contains("one_call")) {
    if (!j["one_call"].is_boolean()) throw Error(what + ": \"one_call\" must be true or false");
    c.one_call = j["one_call"].get<bool>();
  }
  c.source = what;
  return c;
}

bool drafts_can_pay(const StepCosts& c, int64_t max_rows) {
  const double one = c.verify(1);
  for (int64_t q = 2; q <= max_rows; ++q) {
    if (c.verify(q) < double(q) * one * (1 - 1e-9)) return true;
  }
  return false;
}

StepCosts flat_step_costs() {
  StepCosts c;
  c.verify_ms = {{1, 1.0}, {64, 1.0}, {128, 2.0}};
  c.head_ms = {{1, 0.1}, {64, 0.1}, {128, 0.2}};
  c.source = "flat (a GPU's curve)";
  return c;
}

StepCosts load_step_costs(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw Error("cannot read the cost curve '" + path + "'");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(f);
  } catch (const nlohmann::json::exception& e) {
    throw Error("the cost curve '" + path + "' is not valid JSON: " + e.what());
  }
  return StepCosts::from_json(j, "cost curve '" + path + "'");
}

namespace {

// The target's blocks of 1 .. 64 rows after half the image (a typical step's cache length).
Curve timed_verify(const model::Gpt& target, int64_t batch) {
  const auto& cfg = target.config();
  const int64_t prefix = cfg.image_tokens() / 2;
  auto kv = target.new_cache(batch, 66);
  target.prefill(kv, model::null_condition(target, batch));
  target.forward_tokens(kv, at::zeros({batch, prefix}, at::kLong), 0);
  kv.commit();
  std::vector<int64_t> rows;
  for (int64_t q : {1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 24, 32, 48, 64})
    if (prefix + q <= cfg.image_tokens()) rows.push_back(q);
  const auto verify = timed_rounds(rows, [&](int64_t q) {
    target.forward_tokens(kv, at::zeros({batch, q}, at::kLong), prefix);
    kv.pending = 0;
  });
  Curve c;
  for (size_t i = 0; i < rows.size(); ++i) c.emplace_back(rows[i], verify[i]);
  return c;
}

// The EAGLE head's forwards of 1 .. 16 rows after half the image.
Curve timed_head(const model::Gpt& target, const model::Drafter& head, int64_t batch) {
  const auto& cfg = target.config();
  const int64_t prefix = cfg.image_tokens() / 2;
  auto hk = head.new_cache(batch, 64);
  auto feed = [&](int64_t first, int64_t n) {
    const auto feats = at::zeros({batch, n, cfg.dim},
                                 at::TensorOptions().device(target.device()).dtype(target.dtype()));
    const auto pos = at::arange(first, first + n, at::kLong) + cfg.cond_tokens();
    head.forward(&hk, feats, at::zeros({batch, n}, at::kLong), pos);
  };
  feed(0, prefix);
  hk.commit();
  std::vector<int64_t> rows;
  for (int64_t q : {1, 2, 3, 4, 6, 8, 12, 16})
    if (prefix + q <= cfg.image_tokens()) rows.push_back(q);
  const auto ms = timed_rounds(rows, [&](int64_t q) {
    feed(prefix, q);
    hk.pending = 0;
  });
  Curve c;
  for (size_t i = 0; i < rows.size(); ++i) c.emplace_back(rows[i], ms[i]);
  return c;
}

}  // namespace

StepCosts measure_step_costs(const model::Gpt& target, const model::Drafter& head, int64_t batch,
                             int64_t head_batch) {
  static std::mutex mu;
  static std::map<std::tuple<const model::Gpt*, int64_t, int64_t>, StepCosts> cache;
  std::lock_guard<std::mutex> lock(mu);
  if (head_batch < 1) head_batch = batch;
  const auto key = std::make_tuple(&target, batch, head_batch);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  c10::InferenceMode guard;
  StepCosts c;
  c.source = "timed on this device";
  c.verify_ms = timed_verify(target, batch);
  c.head_ms = timed_head(target, head, head_batch);
  cache[key] = c;
  return c;
}

StepCosts measure_parallel_costs(const model::Gpt& target, const model::ParallelHead& head,
                                 int64_t batch) {
  static std::mutex mu;
  static std::map<std::pair<const model::Gpt*, int64_t>, StepCosts> cache;
  std::lock_guard<std::mutex> lock(mu);
  const auto key = std::make_pair(&target, batch);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  c10::InferenceMode guard;
  StepCosts c;
  c.source = "timed on this device";
  c.verify_ms = timed_verify(target, batch);
  const auto feats = at::zeros({1, target.config().dim}, at::kFloat);
  const auto above = at::zeros({1, head.depths()}, at::kLong);
  const auto ms =
      timed_rounds({1}, [&](int64_t) { head.forward(feats, at::zeros({1}, at::kLong), above); });
  c.head_ms = {{1, ms[0]}, {64, ms[0]}};  // one call, whatever the rows fed
  c.one_call = true;
  cache[key] = c;
  return c;
}

}  // namespace adtree::decode
