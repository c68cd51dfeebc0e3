#include "model/cpu/forward_profile.h"

#include <atomic>

namespace adtree::model {

namespace {
std::atomic<bool> g_on{false};
thread_local ForwardProfile t_profile;
}  // namespace

const char* to_string(ForwardPart p) {
  static constexpr const char* kNames[int(ForwardPart::Count)] = {
      "norms", "qkv", "rope_cache", "attention", "wo", "w13", "swiglu", "w2", "residual", "head"};
  return kNames[int(p)];
}

bool is_product(ForwardPart p) {
  return p == ForwardPart::Qkv || p == ForwardPart::Wo || p == ForwardPart::W13 ||
         p == ForwardPart::W2 || p == ForwardPart::Head;
}

double ForwardProfile::total() const {
  double t = 0;
  for (double v : ms) t += v;
  return t;
}

void set_forward_profiling(bool on) {
  g_on.store(on, std::memory_order_relaxed);
}

bool forward_profiling() {
  return g_on.load(std::memory_order_relaxed);
}

ForwardProfile take_forward_profile() {
  const ForwardProfile p = t_profile;
  t_profile = ForwardProfile{};
  return p;
}

PartTimer::PartTimer(ForwardPart part) {
  if (!forward_profiling()) return;
  part_ = int(part);
  t0_ = Clock::now();
}

PartTimer::~PartTimer() {
  if (part_ >= 0) t_profile.ms[part_] += ms_since(t0_);
}

}  // namespace adtree::model
