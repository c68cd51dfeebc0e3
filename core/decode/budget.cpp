#include "decode/budget.h"

#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>

namespace adtree::decode {

BudgetChoice choose_budget(const model::Gpt& target, int64_t batch, double gain,
                           const std::vector<int64_t>& candidates) {
  static std::mutex mu;
  static std::map<std::pair<const model::Gpt*, int64_t>, BudgetChoice> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto key = std::make_pair(&target, batch);
  if (auto it = cache.find(key); it != cache.end()) return it->second;

  c10::InferenceMode guard;
  const auto& cfg = target.config();
  auto kv = target.new_cache(batch, candidates.empty() ? 64 : *std::max_element(candidates.begin(), candidates.end()) + 2);
  model::Condition cond;
  if (cfg.cond == model::CondKind::Class) {
    cond.class_ids = at::full({batch}, cfg.num_classes, at::kLong);
  } else {
    cond.caption = target.null_caption().unsqueeze(0).expand({batch, -1, -1});
    cond.caption_mask = at::ones({batch, cfg.cond_len}, at::kBool);
  }
  target.prefill(kv, cond);
  // A prefix of half the image, as a typical step sees; blocks must still fit inside the image.
  const int64_t prefix = cfg.image_tokens() / 2;
  target.forward_tokens(kv, at::zeros({batch, prefix}, at::kLong), 0);
  kv.commit();
  BudgetChoice choice;
  double best = -1;
  for (int64_t n : candidates) {
    const int64_t q = n + 1;  // root + N
    if (prefix + q > cfg.image_tokens()) break;
    std::vector<double> ms;
    for (int r = 0; r < 5; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      target.forward_tokens(kv, at::zeros({batch, q}, at::kLong), prefix);
      kv.pending = 0;
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    const double cost = ms[ms.size() / 2];
    choice.cost_ms.emplace_back(n, cost);
    const double rate = (1.0 + gain * std::log2(1.0 + double(n))) / cost;
    if (rate > best) {
      best = rate;
      choice.budget = n;
    }
  }
  if (choice.budget == 0) choice.budget = 1;  // an image too small for any candidate
  cache[key] = choice;
  return choice;
}

}  // namespace adtree::decode
