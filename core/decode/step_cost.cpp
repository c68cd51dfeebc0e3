#include "decode/step_cost.h"

#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>

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

template <class Run>
double timed(Run run) {
  std::vector<double> ms;
  for (int r = 0; r < 7; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    const double t =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (r >= 2) ms.push_back(t);  // two warm-ups
  }
  return median_ms(ms);
}
}  // namespace

double StepCosts::verify(int64_t rows) const {
  return interpolate(verify_ms, rows);
}
double StepCosts::head(int64_t rows) const {
  return interpolate(head_ms, rows);
}

nlohmann::json StepCosts::to_json() const {
  return {{"verify_ms", verify_ms}, {"head_ms", head_ms}, {"source", source}};
}

StepCosts StepCosts::from_json(const nlohmann::json& j, const std::string& what) {
  if (!j.is_object()) throw Error(what + ": a cost curve is a JSON object");
  StepCosts c;
  c.verify_ms = curve_from(j, "verify_ms", what);
  c.head_ms = curve_from(j, "head_ms", what);
  c.source = what;
  return c;
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

StepCosts measure_step_costs(const model::Gpt& target, const model::Drafter& head, int64_t batch) {
  static std::mutex mu;
  static std::map<std::pair<const model::Gpt*, int64_t>, StepCosts> cache;
  std::lock_guard<std::mutex> lock(mu);
  const auto key = std::make_pair(&target, batch);
  if (auto it = cache.find(key); it != cache.end()) return it->second;

  c10::InferenceMode guard;
  const auto& cfg = target.config();
  const int64_t prefix = cfg.image_tokens() / 2;  // a typical step's cache length
  StepCosts c;
  c.source = "timed on this device";
  auto kv = target.new_cache(batch, 66);
  model::Condition cond;
  if (cfg.cond == model::CondKind::Class) {
    cond.class_ids = at::full({batch}, cfg.num_classes, at::kLong);
  } else {
    cond.caption = target.null_caption().unsqueeze(0).expand({batch, -1, -1});
    cond.caption_mask = at::ones({batch, cfg.cond_len}, at::kBool);
  }
  target.prefill(kv, cond);
  target.forward_tokens(kv, at::zeros({batch, prefix}, at::kLong), 0);
  kv.commit();
  for (int64_t q : {1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 24, 32, 48, 64}) {
    if (prefix + q > cfg.image_tokens()) break;
    c.verify_ms.emplace_back(q, timed([&] {
                               target.forward_tokens(kv, at::zeros({batch, q}, at::kLong), prefix);
                               kv.pending = 0;
                             }));
  }
  auto hk = head.new_cache(batch, 64);
  auto feed = [&](int64_t first, int64_t n) {
    const auto feats = at::zeros({batch, n, cfg.dim},
                                 at::TensorOptions().device(target.device()).dtype(target.dtype()));
    const auto pos = at::arange(first, first + n, at::kLong) + cfg.cond_tokens();
    head.forward(&hk, feats, at::zeros({batch, n}, at::kLong), pos);
  };
  feed(0, prefix);
  hk.commit();
  for (int64_t q : {1, 2, 3, 4, 6, 8, 12, 16}) {
    if (prefix + q > cfg.image_tokens()) break;
    c.head_ms.emplace_back(q, timed([&] {
                             feed(prefix, q);
                             hk.pending = 0;
                           }));
  }
  cache[key] = c;
  return c;
}

}  // namespace adtree::decode
