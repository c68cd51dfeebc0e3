#include "decode/continuous/continuous_run.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "decode/settings/method.h"

namespace adtree::decode {

at::Tensor trajectory_noise(uint64_t seed, int64_t positions, int steps, int64_t dim) {
  auto gen = at::detail::createCPUGenerator(seed ^ 0x5eedc0ffee123457ULL);
  return at::empty({positions, steps + 1, dim}, at::kFloat).normal_(0.0, 1.0, gen);
}

void set_seed_and_cspd(ContinuousSettings& c, const DecodeRequest& r) {
  c.seed = r.seed;
  c.gamma = int(r.method.cspd.gamma);
  c.prefill_ratio = r.method.cspd.prefill_ratio;
  c.max_residual_tries = int(r.method.cspd.max_tries);
  c.inner_temperature = r.method.cspd.inner_temperature;
}

double ContinuousResult::tokens_per_round() const {
  int64_t in_rounds = 0;
  for (int r : round) in_rounds += r >= 0 ? 1 : 0;
  return rounds ? double(in_rounds) / double(rounds) : 0.0;
}

void record_step(ContinuousResult& r, StepRecord rec, const std::vector<CellStats>& cells,
                 const at::Tensor& tokens, const ContinuousCallback& on_step) {
  rec.step = int64_t(r.stats.steps.size());
  rec.cum_tokens = (r.stats.steps.empty() ? 0 : r.stats.steps.back().cum_tokens) + rec.committed;
  for (size_t i = 0; i < cells.size(); ++i) r.stats.grids.set(rec.cell(i), cells[i]);
  r.stats.add_step(rec);
  if (!on_step) return;
  const std::vector<int64_t> codes(cells.size(), 0);
  on_step(StepEvent{r.stats.steps.back(), codes, cells}, tokens);
}

std::string to_string(ContinuousOrigin o) {
  switch (o) {
    case ContinuousOrigin::Target:
      return "target";
    case ContinuousOrigin::Accepted:
      return "accepted";
    case ContinuousOrigin::Resampled:
      return "resampled";
    case ContinuousOrigin::Bonus:
      return "bonus";
  }
  return "?";
}

nlohmann::json to_json(const ContinuousResult& r, bool per_token) {
  const auto& t = r.timing;
  nlohmann::json j{{"tokens", int64_t(r.origin.size())},
                   {"rounds", r.rounds},
                   {"drafted", r.drafted},
                   {"accepted", r.accepted},
                   {"resampled", r.resampled},
                   {"exhausted", r.exhausted},
                   {"acceptance", r.acceptance()},
                   {"tokens_per_round", r.tokens_per_round()},
                   {"cancelled", r.cancelled},
                   {"time_ms",
                    {{"total", t.total},
                     {"draft_backbone", t.draft_backbone},
                     {"draft_head", t.draft_head},
                     {"target_backbone", t.target_backbone},
                     {"target_head", t.target_head},
                     {"resample", t.resample}}}};
  if (per_token) {
    auto origin = nlohmann::json::array(), round = nlohmann::json::array(),
         prob = nlohmann::json::array(), log_r = nlohmann::json::array(),
         log_s = nlohmann::json::array();
    const auto number = [](double v) {
      return std::isnan(v) ? nlohmann::json() : nlohmann::json(v);
    };
    for (size_t i = 0; i < r.origin.size(); ++i) {
      origin.push_back(to_string(r.origin[i]));
      round.push_back(r.round[i]);
      prob.push_back(number(r.accept_prob[i]));
      log_r.push_back(number(i < r.log_ratio.size() ? r.log_ratio[i] : std::nan("")));
      log_s.push_back(number(i < r.log_s.size() ? r.log_s[i] : std::nan("")));
    }
    j["origin"] = origin;
    j["round"] = round;
    j["accept_prob"] = prob;
    j["log_ratio"] = log_r;
    j["log_s"] = log_s;
  }
  return j;
}

}  // namespace adtree::decode
