// Timing on an asynchronous device: a CUDA op returns before it runs, so a timer around it
// measures the launch. wait_for(t) returns once everything queued before it on t's device has run
// (a one-element copy to the host, which waits for the stream); on the CPU it does nothing.
#pragma once
#include <ATen/ATen.h>

namespace adtree {

void wait_for(const at::Tensor& t);

}  // namespace adtree
