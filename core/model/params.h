// Named parameter sets. Every model (GPT, VQ, drafter) describes its tensors once, as a list of
// ParamSpec; that one list drives loading checks, random initialisation and training.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace adtree::model {

using TensorMap = std::map<std::string, at::Tensor>;

enum class Init { Normal, Zeros, Ones, Uniform };

struct ParamSpec {
  std::string name;
  std::vector<int64_t> shape;
  Init init = Init::Normal;
  double scale = 0.02;  // std for Normal, half-width for Uniform
};

// Every problem between the expected specs and the given tensors, one line each: missing tensors,
// shape mismatches, non-finite values (NaN, infinity), unexpected extra tensors. Empty when
// everything matches. `values` false skips the values (reading every page of a mapped file), for
// files already checked (model/cpu/pack_cache.h).
std::vector<std::string> check_params(const std::vector<ParamSpec>& specs, const TensorMap& tensors,
                                      bool values = true);

// Throws adtree::Error listing every problem (prefixed with `what`, e.g. the file name) if any.
void require_params(const std::vector<ParamSpec>& specs, const TensorMap& tensors,
                    const std::string& what);

// Fresh tensors for every spec, drawn from a generator seeded with `seed` (fp32, CPU).
TensorMap init_params(const std::vector<ParamSpec>& specs, uint64_t seed);

// Shape as text, "[3, 4]".
std::string shape_str(at::IntArrayRef shape);

}  // namespace adtree::model
