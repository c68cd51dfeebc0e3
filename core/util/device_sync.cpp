#include "util/device_sync.h"

namespace adtree {

void wait_for(const at::Tensor& t) {
  if (!t.defined() || t.device().is_cpu() || t.numel() == 0) return;
  (void)t.reshape(-1).narrow(0, 0, 1).to(at::kCPU);
}

at::Tensor to_device_async(const at::Tensor& t, at::Device device) {
  if (!device.is_cuda() || !t.device().is_cpu()) return t.to(device);
  return t.pin_memory().to(device, /*non_blocking=*/true);
}

}  // namespace adtree
