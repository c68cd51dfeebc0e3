// Timing on an asynchronous device: a CUDA op returns before it runs, so a timer around it
// measures the launch. wait_for(t) returns once everything queued before it on t's device has run
// (a one-element copy to the host, which waits for the stream); on the CPU it does nothing.
#pragma once
#include <ATen/ATen.h>

namespace adtree {

void wait_for(const at::Tensor& t);

// A small host tensor (indices, positions, token ids) on `device` without waiting for the device:
// on a GPU through pinned memory and an asynchronous copy, since a copy from pageable memory first
// waits for everything queued on the stream (one hidden synchronisation per copy). Elsewhere, and
// for tensors already on `device`, plain .to(device).
at::Tensor to_device_async(const at::Tensor& t, at::Device device);

}  // namespace adtree
