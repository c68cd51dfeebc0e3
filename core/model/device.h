// The names a user gives a device and a precision ("cpu", "cuda:1"; "fp32", "bf16"), read once for
// every loader: the model directory (model_dir.h) and the text encoder (text/text_encoder.h).
#pragma once
#include <ATen/ATen.h>

#include <string>

namespace adtree::model {

// Throws adtree::Error (no CUDA in this build, unknown dtype, ...) with a clear message.
at::Device parse_device(const std::string& name);
at::ScalarType parse_dtype(const std::string& name);

}  // namespace adtree::model
