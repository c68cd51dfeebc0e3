// Precompiled header for every target that uses libtorch. Lighter than <torch/torch.h>: the tensor
// API, the functional ops and autograd, without the nn module / data / serialization front end.
#pragma once
#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <torch/csrc/autograd/generated/variable_factories.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>
