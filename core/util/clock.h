// Wall-clock timing for the statistics and the benches: one steady clock and one way to read it.
#pragma once
#include <chrono>

namespace adtree {

using Clock = std::chrono::steady_clock;

// Milliseconds since t0.
inline double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

}  // namespace adtree
