#include "decode/tree/budget.h"

#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>

#include "model/conditioning.h"
#include "util/clock.h"

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
  auto kv = target.new_cache(
      batch, candidates.empty() ? 64 : *std::max_element(candidates.begin(), candidates.end()) + 2);
  target.prefill(kv, model::null_condition(target, batch));
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
      auto t0 = Clock::now();
      target.forward_tokens(kv, at::zeros({batch, q}, at::kLong), prefix);
      kv.pending = 0;
      ms.push_back(ms_since(t0));
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

AdaptiveBudget::AdaptiveBudget(const BudgetChoice& timed, double gain)
    : cost_(timed.cost_ms), n_(std::max<int64_t>(1, timed.budget)) {
  const int64_t max_n = cost_.empty() ? n_ : cost_.back().first;
  for (int64_t r = 1; r <= max_n; ++r) {
    prior_.push_back(gain * (std::log2(1.0 + double(r)) - std::log2(double(r))));
  }
  hits_.assign(prior_.size(), 0.0);
  trials_.assign(prior_.size(), 0.0);
}

double AdaptiveBudget::expected_tokens(int64_t n) const {
  constexpr double kPseudo = 4.0;
  // Ranks beyond the deepest one tried (kPseudo times or more) follow the fixed model's decay from
  // that rank's measured rate: optimistic where the run accepts well, so a larger N gets tried.
  int64_t tried = -1;
  for (int64_t r = 0; r < int64_t(prior_.size()); ++r) {
    if (trials_[size_t(r)] >= kPseudo) tried = r;
  }
  auto measured = [&](int64_t r, double prior) {
    return (hits_[size_t(r)] + kPseudo * prior) / (trials_[size_t(r)] + kPseudo);
  };
  const double at_tried = tried >= 0 ? measured(tried, prior_[size_t(tried)]) : 0.0;
  double t = 1.0;
  for (int64_t r = 0; r < n && r < int64_t(prior_.size()); ++r) {
    const double prior = tried >= 0 && r > tried
                             ? at_tried * prior_[size_t(r)] / prior_[size_t(tried)]
                             : prior_[size_t(r)];
    t += measured(r, prior);
  }
  return t;
}

void AdaptiveBudget::observe(const DraftTree& tree, const AcceptResult& acc) {
  // Rank of each node by score, ties to the earlier node: the order a budget keeps them in.
  std::vector<int64_t> order;
  for (int64_t i = 1; i < tree.size(); ++i) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return tree.nodes[size_t(a)].score > tree.nodes[size_t(b)].score;
  });
  std::vector<int64_t> rank_of(size_t(tree.size()), -1);
  for (size_t r = 0; r < order.size(); ++r) rank_of[size_t(order[r])] = int64_t(r);
  const int64_t tried = std::min<int64_t>(int64_t(order.size()), int64_t(prior_.size()));
  for (int64_t r = 0; r < tried; ++r) trials_[size_t(r)] += 1;
  for (int64_t id : acc.path) {
    const int64_t r = rank_of[size_t(id)];
    if (r >= 0 && r < tried) hits_[size_t(r)] += 1;
  }
  double best = -1;
  for (const auto& [n, ms] : cost_) {
    const double rate = expected_tokens(n) / ms;
    if (rate > best) best = rate, n_ = n;
  }
}

}  // namespace adtree::decode
