// Where a lean forward's time goes, part by part (`adtree bench --blocks` prints it per block
// size): the products, attention, the row-wise loops and the output head. Off unless a bench turns
// it on, so a decoding step pays one predictable branch per part. The calling thread's parts only:
// a product shared out over the worker pool counts once, as the wall time it took.
#pragma once
#include <cstdint>

#include "util/clock.h"

namespace adtree::model {

enum class ForwardPart {
  Norms,      // RMSNorm of the attention and feed-forward inputs, and the final one
  Qkv,        // the fused q, k, v product
  RopeCache,  // RoPE on q and k, k and v into the cache
  Attention,  // scores, softmax and the weighted values over prefix + block
  Wo,         // the attention's output product
  W13,        // the feed-forward's gate and up products (one fused product)
  Swiglu,     // silu(gate) * up
  W2,         // the feed-forward's down product
  Residual,   // the two residual adds
  Head,       // the output product (logits)
  Count
};
const char* to_string(ForwardPart p);
bool is_product(ForwardPart p);  // a matrix product: qkv, wo, w13, w2, head

struct ForwardProfile {
  double ms[int(ForwardPart::Count)] = {};
  double total() const;
};

void set_forward_profiling(bool on);
bool forward_profiling();
// The calling thread's sums since the last take, then zero.
ForwardProfile take_forward_profile();

// Adds the time from its construction to its destruction to `part` while profiling is on.
class PartTimer {
 public:
  explicit PartTimer(ForwardPart part);
  ~PartTimer();
  PartTimer(const PartTimer&) = delete;
  PartTimer& operator=(const PartTimer&) = delete;

 private:
  int part_ = -1;  // -1: profiling was off
  Clock::time_point t0_;
};

}  // namespace adtree::model
