#include "decode/mar/mar_schedule.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "util/error.h"

namespace adtree::decode {

std::vector<MarScheduleStep> mar_masking_schedule(int64_t n, int num_iter, double cfg,
                                                  bool cfg_linear) {
  if (num_iter < 1 || num_iter > n)
    throw Error("num_iter must be in 1.." + std::to_string(n) + ", got " +
                std::to_string(num_iter));
  std::vector<MarScheduleStep> steps;
  int64_t masked = n;
  for (int s = 0; s < num_iter; ++s) {
    int64_t keep = int64_t(std::floor(double(n) * std::cos(M_PI / 2 * (s + 1) / num_iter)));
    keep = std::max<int64_t>(1, std::min(masked - 1, keep));
    if (s == num_iter - 1) keep = 0;  // the last step predicts every token left
    MarScheduleStep st;
    st.masked_before = masked;
    st.masked_after = keep;
    // MAR computes the scale from the tokens masked after the step as its mask says (at least
    // one, even at the last step).
    const int64_t still = std::max<int64_t>(1, keep);
    st.cfg = cfg_linear ? 1 + (cfg - 1) * double(n - still) / double(n) : cfg;
    steps.push_back(st);
    masked = keep;
  }
  return steps;
}

}  // namespace adtree::decode
