// When the engine decodes a preview (ARCHITECTURE.md "Threading"): at most one per interval, and
// the preview thread busy at most ~1/6 of the time, the first preview of a run included. On two
// cores a busier preview thread slows the decoding thread (docs/GUI.md); with a decoder as costly
// as LlamaGen's VQ-16 (about 1.3 s a picture) a run of a few seconds gets no preview before its
// final picture, and front ends paint new tokens in their code's colour meanwhile.
#pragma once
#include <algorithm>

namespace adtree::engine {

// The gap after a preview is requested, from the last decode's cost (or the load's estimate).
inline double preview_gap_ms(double interval_ms, double cost_ms) {
  return std::max(interval_ms, 6.0 * cost_ms);
}

// How long into a run the first preview waits: none for a cheap decoder (its first committed step
// is shown at once), the gap less one interval for a costly one.
inline double first_preview_delay_ms(double interval_ms, double cost_ms) {
  return preview_gap_ms(interval_ms, cost_ms) - interval_ms;
}

}  // namespace adtree::engine
