#include "decode/verify/coupling.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace adtree::decode {

namespace {
// A uniform in (0, 1) from 53 bits of a 64-bit hash: never 0 or 1, so -log(u) is finite and > 0.
double open_uniform(uint64_t h) {
  return (double(h >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}
}  // namespace

CouplingNoise::CouplingNoise(uint64_t seed, int64_t vocab)
    : key_(splitmix64(seed ^ 0x6a09e667f3bcc909ULL)), vocab_(vocab) {
  if (vocab < 1) throw Error("coupling noise needs a vocabulary");
}

const std::vector<double>& CouplingNoise::weights(int64_t cell) {
  auto it = cells_.find(cell);
  if (it != cells_.end()) return it->second;
  std::vector<double> w(static_cast<size_t>(vocab_));
  // Counter-based: the value for (seed, cell, token) does not depend on what was drawn before,
  // so every method sees the same noise whatever order it visits the cells in.
  const uint64_t cell_key = splitmix64(key_ ^ splitmix64(uint64_t(cell)));
  for (int64_t v = 0; v < vocab_; ++v) {
    const double e = -std::log(open_uniform(splitmix64(cell_key + uint64_t(v))));
    w[size_t(v)] = 1.0 / e;  // exp(Gumbel) = 1 / Exp(1)
  }
  return cells_.emplace(cell, std::move(w)).first->second;
}

at::Tensor CouplingNoise::weights_on(int64_t first, int64_t count, at::Device device) {
  auto w = at::empty({count, vocab_}, at::kDouble);
  for (int64_t c = 0; c < count; ++c) {
    std::copy_n(weights(first + c).data(), vocab_, w[c].data_ptr<double>());
  }
  // Pinned and asynchronous on a GPU: a copy from pageable memory would wait for the stream.
  return device.is_cuda() ? w.pin_memory().to(device, /*non_blocking=*/true) : w.to(device);
}

int64_t CouplingNoise::choose(const float* p, int64_t cell) {
  const int64_t x = weighted_argmax(p, weights(cell).data(), vocab_);
  if (x < 0) throw Error("cannot sample: the distribution has no mass");
  return x;
}

int64_t CouplingNoise::choose(const at::Tensor& p, int64_t cell) {
  auto c = p.to(at::kCPU, at::kFloat).contiguous();
  if (c.numel() != vocab_) throw Error("coupled sample: the row does not match the vocabulary");
  return choose(c.data_ptr<float>(), cell);
}

void CouplingNoise::forget_before(int64_t cell) {
  cells_.erase(cells_.begin(), cells_.lower_bound(cell));
}

int64_t weighted_argmax(const float* p, const double* w, int64_t n) {
  int64_t best = -1;
  double best_v = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double v = double(p[i]) * w[i];
    if (v > best_v) best_v = v, best = i;
  }
  return best;
}

int64_t draw_index(const std::vector<double>& w, Rng& rng) {
  double total = 0;
  for (double x : w) total += x;
  if (!(total > 0)) throw Error("cannot sample: the distribution has no mass");
  const double u = rng.uniform() * total;
  double acc = 0;
  int64_t last = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    if (w[i] <= 0) continue;
    acc += w[i];
    last = int64_t(i);
    if (u < acc) return int64_t(i);
  }
  return last;  // rounding at the top of the CDF
}

int64_t maximal_coupling_draw(int64_t prev, const float* q_prev, const float* q_new, int64_t n,
                              Rng& rng) {
  const double old_p = q_prev ? double(q_prev[prev]) : 1.0;
  const double keep = old_p > 0 ? std::min(1.0, double(q_new[prev]) / old_p) : 0.0;
  if (rng.uniform() < keep) return prev;
  std::vector<double> residual(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const double o = q_prev ? double(q_prev[i]) : (i == prev ? 1.0 : 0.0);
    residual[size_t(i)] = std::max(0.0, double(q_new[i]) - o);
  }
  double s = 0;
  for (double x : residual) s += x;
  if (!(s > 0)) {  // q_new <= q_prev everywhere (equal up to rounding): keep was ~1
    for (int64_t i = 0; i < n; ++i) residual[size_t(i)] = q_new[i];
  }
  return draw_index(residual, rng);
}

}  // namespace adtree::decode
