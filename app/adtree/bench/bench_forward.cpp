#include "bench_forward.h"

#include <algorithm>
#include <chrono>

#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include "model/cpu/forward_profile.h"
#include "model/gpu/cuda_graph.h"
#include "model/gpu/static_forward.h"
#include "util/clock.h"
#include "util/device_sync.h"
#include "util/threads.h"

namespace adtree::cli {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

namespace {
// A cache holding the condition and `prefix` image tokens, committed: what every timed block
// attends to.
model::KvCache primed_cache(const model::Gpt& gpt, int64_t batch, int64_t prefix,
                            const model::Condition& cond) {
  auto cache = gpt.new_cache(batch, 64);
  gpt.prefill(cache, cond);
  gpt.forward_tokens(cache, at::zeros({batch, prefix}, at::kLong), 0);
  cache.commit();
  return cache;
}
}  // namespace

std::vector<at::Tensor> matrix_weights(const model::Gpt& gpt) {
  std::vector<at::Tensor> mats;
  for (const auto& [name, t] : gpt.weights()) {
    if (t.dim() == 2 && (name.rfind("layers.", 0) == 0 || name == "output.weight")) {
      mats.push_back(t);
    }
  }
  return mats;
}

// Median ms of one forward of q tokens after `prefix` image tokens (KV rows reused each time).
double forward_ms(const model::Gpt& gpt, int64_t batch, int64_t q, int64_t prefix, int reps,
                  const model::Condition& cond) {
  c10::InferenceMode guard;
  auto cache = primed_cache(gpt, batch, prefix, cond);
  auto block = at::zeros({batch, q}, at::kLong);
  std::vector<double> ms;
  for (int r = 0; r < reps + 2; ++r) {
    wait_for(cache.key_bias);  // what the last repetition queued has run
    auto t0 = Clock::now();
    wait_for(gpt.forward_tokens(cache, block, prefix).logits);
    cache.pending = 0;  // drop the block: every repetition sees the same prefix
    const double t = ms_since(t0);
    if (r >= 2) ms.push_back(t);  // two warm-up runs
  }
  return median(ms);
}

nlohmann::json forward_parts(const model::Gpt& gpt, int64_t batch, int64_t q, int64_t prefix,
                             int reps, const model::Condition& cond) {
  if (!gpt.lean_ready() || gpt.device().is_cuda()) return nlohmann::json::object();
  c10::InferenceMode guard;
  auto cache = primed_cache(gpt, batch, prefix, cond);
  auto block = at::zeros({batch, q}, at::kLong);
  for (int r = 0; r < 2; ++r) {  // warm-up, unprofiled
    gpt.forward_tokens(cache, block, prefix);
    cache.pending = 0;
  }
  model::set_forward_profiling(true);
  model::take_forward_profile();
  for (int r = 0; r < reps; ++r) {
    gpt.forward_tokens(cache, block, prefix);
    cache.pending = 0;
  }
  const auto p = model::take_forward_profile();
  model::set_forward_profiling(false);
  nlohmann::json parts = nlohmann::json::object();
  double products = 0;
  for (int i = 0; i < int(model::ForwardPart::Count); ++i) {
    const auto part = model::ForwardPart(i);
    parts[model::to_string(part)] = p.ms[i] / std::max(1, reps);
    if (model::is_product(part)) products += p.ms[i] / std::max(1, reps);
  }
  return {{"parts", parts}, {"products_ms", products}};
}

double onednn_products_ms(const model::Gpt& gpt, int64_t rows, int reps) {
  if (gpt.dtype() != at::kBFloat16 || !gpt.device().is_cpu() || !at::hasMKLDNN()) return -1;
  c10::InferenceMode guard;
  std::vector<at::Tensor> mats;
  for (const auto& w : matrix_weights(gpt)) mats.push_back(w.to(at::kBFloat16).contiguous());
  std::vector<at::Tensor> xs, ys;
  for (const auto& w : mats) {
    xs.push_back(at::randn({rows, w.size(1)}).to(at::kBFloat16));
    ys.push_back(at::empty({rows, w.size(0)}, at::kBFloat16));
  }
  // On as many threads as the lean path's products (inference keeps libtorch at one).
  const int intra = at::get_num_threads();
  at::set_num_threads(worker_threads());
  std::vector<double> ms;
  for (int r = 0; r < reps + 2; ++r) {
    const auto t0 = Clock::now();
    for (size_t i = 0; i < mats.size(); ++i) at::mm_out(ys[i], xs[i], mats[i].t());
    if (r >= 2) ms.push_back(ms_since(t0));
  }
  at::set_num_threads(intra);
  return median(ms);
}

// Median ms of one draft-head forward of q rows (one expansion level of q frontier nodes) after
// `prefix` image tokens: what a tree pays per level, against the target's step.
double head_level_ms(const model::Drafter& head, const model::Gpt& gpt, int64_t batch, int64_t q,
                     int64_t prefix, int reps) {
  c10::InferenceMode guard;
  const auto& c = gpt.config();
  auto cache = head.new_cache(batch, 64);
  auto run = [&](int64_t first, int64_t n) {
    auto feats =
        at::zeros({batch, n, c.dim}, at::TensorOptions().device(gpt.device()).dtype(gpt.dtype()));
    auto toks = at::zeros({batch, n}, at::kLong);
    auto pos = at::arange(first, first + n, at::kLong) + c.cond_tokens();
    wait_for(head.forward(&cache, feats, toks, pos).logits);
  };
  run(0, prefix);
  cache.commit();
  std::vector<double> ms;
  for (int r = 0; r < reps + 2; ++r) {
    wait_for(cache.key_bias);
    auto t0 = Clock::now();
    run(prefix, q);
    cache.pending = 0;
    const double t = ms_since(t0);
    if (r >= 2) ms.push_back(t);
  }
  return median(ms);
}

double parallel_call_ms(const model::ParallelHead& head, int reps) {
  c10::InferenceMode guard;
  const auto feats = at::zeros({1, head.target().config().dim}, at::kFloat);
  const auto above = at::zeros({1, head.depths()}, at::kLong);
  const auto token = at::zeros({1}, at::kLong);
  std::vector<double> ms;
  for (int r = 0; r < reps + 2; ++r) {
    auto t0 = Clock::now();
    wait_for(head.forward(feats, token, above));
    const double t = ms_since(t0);
    if (r >= 2) ms.push_back(t);
  }
  return median(ms);
}

double fixed_forward_ms(const model::Gpt& gpt, int64_t batch, int64_t q, int64_t prefix, int reps,
                        const model::Condition& cond, bool graph) {
  c10::InferenceMode guard;
  auto cache = primed_cache(gpt, batch, prefix, cond);
  auto block = model::new_static_block(cache, q);
  const auto pos = at::arange(prefix, prefix + q, at::kLong) + gpt.config().cond_tokens();
  model::fill_static_block(block, cache, gpt.rope(), at::zeros({batch, q}, at::kLong), pos);
  std::unique_ptr<model::GraphedForward> captured;
  if (graph && !(captured = model::capture_forward(gpt, block, cache))) return -1;
  std::vector<double> ms;
  for (int r = 0; r < reps + 2; ++r) {
    wait_for(cache.key_bias);
    const auto t0 = Clock::now();
    wait_for(captured ? captured->replay().logits : gpt.forward_static(block, cache).logits);
    if (r >= 2) ms.push_back(ms_since(t0));  // the block's rows are simply rewritten
  }
  return median(ms);
}

}  // namespace adtree::cli
