#include "model/device.h"

#include "util/error.h"

namespace adtree::model {

at::Device parse_device(const std::string& name) {
  if (name == "cpu") return at::kCPU;
  if (name.rfind("cuda", 0) == 0) {
    if (!at::hasCUDA()) {
      throw Error("device '" + name + "' requested, but this build has no CUDA support or no GPU " +
                  "is visible (use --device cpu)");
    }
    try {
      return at::Device(name);
    } catch (const std::exception&) {
      throw Error("invalid device '" + name + "'");
    }
  }
  throw Error("unknown device '" + name + "' (expected cpu, cuda or cuda:N)");
}

at::ScalarType parse_dtype(const std::string& name) {
  if (name == "fp32" || name == "float32") return at::kFloat;
  if (name == "bf16" || name == "bfloat16") return at::kBFloat16;
  if (name == "fp16" || name == "float16") return at::kHalf;
  throw Error("unknown dtype '" + name + "' (expected fp32, bf16 or fp16)");
}

}  // namespace adtree::model
