#include "model/params.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <sstream>

#include "util/error.h"

namespace adtree::model {

std::string shape_str(at::IntArrayRef shape) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << ']';
  return os.str();
}

namespace {
// Whether any element of `bits` (IEEE floats seen as unsigned integers) has an all-ones exponent
// (NaN or infinity). One pass at memory speed, no temporaries: a plain loop the compiler
// vectorises, where at::isfinite(...).all() made a bool tensor per slice and took a third of a
// GPT-B load (docs/PERFORMANCE.md, "The whole picture").
template <typename U>
bool any_non_finite(const U* bits, int64_t n, U exponent) {
  bool bad = false;
  for (int64_t i = 0; i < n; ++i) bad |= (bits[i] & exponent) == exponent;
  return bad;
}

// Whether every value of a floating-point tensor is finite.
bool all_finite(const at::Tensor& t) {
  if (!at::isFloatingType(t.scalar_type()) || t.numel() == 0) return true;
  if (!t.device().is_cpu() || !t.is_contiguous()) {
    return at::isfinite(t).all().item<bool>();  // off the CPU, or a view: libtorch's own check
  }
  const void* p = t.data_ptr();
  const int64_t n = t.numel();
  switch (t.scalar_type()) {
    case at::kFloat:
      return !any_non_finite(static_cast<const uint32_t*>(p), n, uint32_t{0x7f800000});
    case at::kDouble:
      return !any_non_finite(static_cast<const uint64_t*>(p), n, uint64_t{0x7ff0000000000000});
    case at::kBFloat16:
      return !any_non_finite(static_cast<const uint16_t*>(p), n, uint16_t{0x7f80});
    case at::kHalf:
      return !any_non_finite(static_cast<const uint16_t*>(p), n, uint16_t{0x7c00});
    default:
      return at::isfinite(t).all().item<bool>();
  }
}
}  // namespace

std::vector<std::string> check_params(const std::vector<ParamSpec>& specs, const TensorMap& tensors,
                                      bool values) {
  std::vector<std::string> problems;
  std::set<std::string> expected;
  for (const auto& s : specs) {
    expected.insert(s.name);
    auto it = tensors.find(s.name);
    if (it == tensors.end()) {
      problems.push_back("missing tensor '" + s.name + "' (expected shape " + shape_str(s.shape) +
                         ")");
    } else if (it->second.sizes() != at::IntArrayRef(s.shape)) {
      problems.push_back("tensor '" + s.name + "' has shape " + shape_str(it->second.sizes()) +
                         ", expected " + shape_str(s.shape));
    } else if (values && !all_finite(it->second)) {
      // A NaN or infinity in a weight decodes a black or noise picture without any error.
      problems.push_back("tensor '" + s.name + "' holds non-finite values (NaN or infinity)");
    }
  }
  for (const auto& [name, t] : tensors) {
    if (!expected.count(name)) {
      problems.push_back("unexpected tensor '" + name + "' with shape " + shape_str(t.sizes()));
    }
  }
  return problems;
}

void require_params(const std::vector<ParamSpec>& specs, const TensorMap& tensors,
                    const std::string& what) {
  auto problems = check_params(specs, tensors);
  if (problems.empty()) return;
  std::string msg = what + ": " + std::to_string(problems.size()) +
                    " tensor problem(s) against the configuration:";
  for (const auto& p : problems) msg += "\n  - " + p;
  throw Error(msg);
}

TensorMap init_params(const std::vector<ParamSpec>& specs, uint64_t seed) {
  auto gen = at::detail::createCPUGenerator(seed);
  TensorMap out;
  for (const auto& s : specs) {
    at::Tensor t;
    switch (s.init) {
      case Init::Normal:
        t = at::empty(s.shape, at::kFloat).normal_(0.0, s.scale, gen);
        break;
      case Init::Uniform:
        t = at::empty(s.shape, at::kFloat).uniform_(-s.scale, s.scale, gen);
        break;
      case Init::Zeros:
        t = at::zeros(s.shape, at::kFloat);
        break;
      case Init::Ones:
        t = at::ones(s.shape, at::kFloat);
        break;
    }
    out.emplace(s.name, t);
  }
  return out;
}

}  // namespace adtree::model
