#include "decode/tree/adt_policy.h"

#include <algorithm>
#include <cmath>

#include "util/rng.h"

namespace adtree::decode {

AdtPolicy::AdtPolicy(const AdtSettings& s, int64_t grid_h, int64_t grid_w, uint64_t seed)
    : s_(s),
      h_(grid_h),
      w_(grid_w),
      seed_(seed),
      cell_(size_t(grid_h * grid_w)),
      last_{s.d0, s.k0} {}

void AdtPolicy::start() {
  std::fill(cell_.begin(), cell_.end(), TreeShape{});
  last_ = TreeShape{s_.d0, s_.k0};
  if (!cell_.empty()) cell_[0] = last_;
}

TreeShape AdtPolicy::adapt(const AdtSettings& s, TreeShape t, double alpha) {
  auto ceil_half = [](int64_t a, int64_t b) { return (a + b + 1) / 2; };
  auto floor_half = [](int64_t a, int64_t b) { return (a + b) / 2; };
  TreeShape n = t;
  const bool positive = alpha >= s.beta;
  if (s.mode == AdtMode::Bisect) {
    // Half-way to the bound: the mirror image for a negative outcome.
    n.d = positive ? ceil_half(t.d, s.d_max) : floor_half(t.d, s.d_min);
    n.k = positive ? floor_half(t.k, s.k_min) : ceil_half(t.k, s.k_max);
  } else {
    n.d = positive ? t.d + s.step_d : t.d - s.step_d;
    n.k = positive ? t.k - s.step_k : t.k + s.step_k;
  }
  n.d = std::clamp(n.d, s.d_min, s.d_max);
  n.k = std::clamp(n.k, s.k_min, s.k_max);
  return n;
}

std::string AdtPolicy::describe(const AdtSettings& s, double alpha) {
  const bool positive = alpha >= s.beta;
  std::string r =
      positive ? "alpha >= beta: deeper and narrower" : "alpha < beta: shallower and wider";
  if (s.mode == AdtMode::Bisect) {
    r += positive ? " (d halfway to d_max = " + std::to_string(s.d_max) +
                        ", k halfway to k_min = " + std::to_string(s.k_min) + ")"
                  : " (d halfway to d_min = " + std::to_string(s.d_min) +
                        ", k halfway to k_max = " + std::to_string(s.k_max) + ")";
  } else {
    r += positive ? " (d + " + std::to_string(s.step_d) + ", k - " + std::to_string(s.step_k) + ")"
                  : " (d - " + std::to_string(s.step_d) + ", k + " + std::to_string(s.step_k) + ")";
  }
  return r;
}

TreeShape AdtPolicy::shape_for(int64_t first_cell, std::string* origin, double confidence) const {
  auto say = [&](const std::string& s) {
    if (origin) *origin = s;
  };
  if (s_.adjacency == Adjacency::Random) {
    // A hash of (seed, cell): the shape for a cell does not depend on how many steps came before,
    // and no RNG state is shared with the sampler.
    const uint64_t h = splitmix64(seed_ ^ splitmix64(uint64_t(first_cell)));
    say("random (baseline)");
    return TreeShape{s_.d_min + int64_t(h % uint64_t(s_.d_max - s_.d_min + 1)),
                     s_.k_min + int64_t((h >> 32) % uint64_t(s_.k_max - s_.k_min + 1))};
  }
  if (s_.adjacency == Adjacency::Confidence) {
    // Confident draft: deep and narrow; unsure: shallow and wide (linear in the top-1 q).
    const double c = std::clamp(confidence, 0.0, 1.0);
    say("draft confidence " + std::to_string(c).substr(0, 4) + " (baseline)");
    return TreeShape{s_.d_min + int64_t(std::lround(c * double(s_.d_max - s_.d_min))),
                     s_.k_max - int64_t(std::lround(c * double(s_.k_max - s_.k_min)))};
  }
  auto rc = [](int64_t r, int64_t c) {
    return "(" + std::to_string(r) + ", " + std::to_string(c) + ")";
  };
  if (s_.adjacency == Adjacency::None) {
    say("the previous step (no adjacency)");
    return last_;
  }
  const int64_t r = first_cell / w_, c = first_cell % w_;
  auto stored = [&](int64_t rr, int64_t cc) -> const TreeShape* {
    if (rr < 0 || cc < 0 || rr >= h_ || cc >= w_) return nullptr;
    const auto& t = cell_[size_t(rr * w_ + cc)];
    return t.d > 0 ? &t : nullptr;
  };
  const TreeShape* left = c > 0 ? stored(r, c - 1) : stored(r - 1, 0);  // row start: the cell above
  if (s_.adjacency == Adjacency::LeftUp && c > 0) {
    const TreeShape* up = stored(r - 1, c);
    if (left && up) {
      // Average of the two neighbours, rounded half up.
      say("average of left " + rc(r, c - 1) + " and up " + rc(r - 1, c));
      return TreeShape{(left->d + up->d + 1) / 2, (left->k + up->k + 1) / 2};
    }
    if (up) {
      say("up neighbour " + rc(r - 1, c));
      return *up;
    }
  }
  if (left) {
    // Cell 0 holds what the prefill stored, the initial shape; steps commit cells from 1 on.
    const bool initial = (c > 0 ? r * w_ + c - 1 : (r - 1) * w_) == 0;
    say(initial ? "the initial shape (d0, k0)"
        : c > 0 ? "left neighbour " + rc(r, c - 1)
                : "row start: the cell above " + rc(r - 1, 0));
    return *left;
  }
  say("the initial shape (d0, k0)");
  return TreeShape{s_.d0, s_.k0};  // the very first tree
}

TreeShape AdtPolicy::update(TreeShape requested, double alpha, const std::vector<int64_t>& cells) {
  return keep(adapt(s_, requested, alpha), cells);
}

TreeShape AdtPolicy::keep(TreeShape next, const std::vector<int64_t>& cells) {
  for (auto c : cells) {
    if (c >= 0 && c < int64_t(cell_.size())) cell_[size_t(c)] = next;
  }
  last_ = next;
  return next;
}

}  // namespace adtree::decode
