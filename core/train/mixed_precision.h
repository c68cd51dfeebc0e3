// bf16 autocast for training steps: matrix products (linear, matmul, bmm, conv) run in bfloat16
// with fp32 sums, everything autocast leaves alone (norms, softmax, losses, the residual stream,
// the optimiser and its master weights) stays fp32. On CPUs with AMX or AVX512-BF16 oneDNN
// runs these products several times faster than fp32 (docs/TRAINING.md, "Matrix precision on a
// CPU").
#pragma once
#include <ATen/ATen.h>

#include <string>

namespace adtree::train {

// The --matmul choices: "fp32", "tf32" (CUDA tensor cores; fp32 on a CPU) and "bf16" (autocast).
// An adtree::Error for anything else.
void check_matmul_choice(const std::string& matmul);
// What a run on `device` with `matmul` actually computes: "fp32", "tf32" or "bf16" (a CPU has no
// TF32, so "tf32" there is "fp32"). Recorded in the run's provenance.
std::string effective_matmul(const std::string& matmul, const at::Device& device);

// RAII: bf16 autocast on `device`'s type while alive when `enabled`, the previous state after.
// Leaving the outermost guard drops autocast's cache of casted weights, which would otherwise
// keep the bf16 copies of the weights from before the optimiser's in-place update.
class AutocastBf16 {
 public:
  AutocastBf16(const at::Device& device, bool enabled);
  ~AutocastBf16();
  AutocastBf16(const AutocastBf16&) = delete;
  AutocastBf16& operator=(const AutocastBf16&) = delete;

 private:
  bool enabled_ = false;
  at::DeviceType type_ = at::kCPU;
  bool was_enabled_ = false;
  at::ScalarType was_dtype_ = at::kBFloat16;
};

}  // namespace adtree::train
