#include "train/mixed_precision.h"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include "util/error.h"

namespace adtree::train {

namespace {

// libtorch 2.4 replaced the per-device autocast functions by ones that take the device type;
// the old ones are gone from later releases, so both spellings are kept here.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
bool autocast_enabled(at::DeviceType t) {
  return at::autocast::is_autocast_enabled(t);
}
void set_autocast(at::DeviceType t, bool on) {
  at::autocast::set_autocast_enabled(t, on);
}
at::ScalarType autocast_dtype(at::DeviceType t) {
  return at::autocast::get_autocast_dtype(t);
}
void set_dtype(at::DeviceType t, at::ScalarType d) {
  at::autocast::set_autocast_dtype(t, d);
}
#else
bool autocast_enabled(at::DeviceType t) {
  return t == at::kCPU ? at::autocast::is_cpu_enabled() : at::autocast::is_enabled();
}
void set_autocast(at::DeviceType t, bool on) {
  if (t == at::kCPU) {
    at::autocast::set_cpu_enabled(on);
  } else {
    at::autocast::set_enabled(on);
  }
}
at::ScalarType autocast_dtype(at::DeviceType t) {
  return t == at::kCPU ? at::autocast::get_autocast_cpu_dtype()
                       : at::autocast::get_autocast_gpu_dtype();
}
void set_dtype(at::DeviceType t, at::ScalarType d) {
  if (t == at::kCPU) {
    at::autocast::set_autocast_cpu_dtype(d);
  } else {
    at::autocast::set_autocast_gpu_dtype(d);
  }
}
#endif

}  // namespace

void check_matmul_choice(const std::string& matmul) {
  if (matmul != "tf32" && matmul != "fp32" && matmul != "bf16") {
    throw Error("--matmul must be fp32, tf32 or bf16, not '" + matmul + "'");
  }
}

std::string effective_matmul(const std::string& matmul, const at::Device& device) {
  check_matmul_choice(matmul);
  if (matmul == "tf32" && !device.is_cuda()) return "fp32";
  return matmul;
}

AutocastBf16::AutocastBf16(const at::Device& device, bool enabled)
    : enabled_(enabled), type_(device.type()) {
  if (!enabled_) return;
  if (type_ != at::kCPU && type_ != at::kCUDA) {
    throw Error("bf16 autocast runs on a CPU or a CUDA device only");
  }
  was_enabled_ = autocast_enabled(type_);
  was_dtype_ = autocast_dtype(type_);
  set_autocast(type_, true);
  set_dtype(type_, at::kBFloat16);
  at::autocast::increment_nesting();
}

AutocastBf16::~AutocastBf16() {
  if (!enabled_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  set_autocast(type_, was_enabled_);
  set_dtype(type_, was_dtype_);
}

}  // namespace adtree::train
