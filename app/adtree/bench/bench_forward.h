// The forward timings of `adtree bench`: one target forward of q tokens after a prefix, eager, on
// fixed shapes (model/gpu/static_forward.h) and as a CUDA graph replay, and one draft-head level.
// Each is the median of `reps` runs after two warm-ups, with the device waited for around every
// run.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <vector>

#include "model/llamagen/drafter.h"
#include "model/llamagen/gpt.h"
#include "model/llamagen/parallel_head.h"

namespace adtree::cli {

double median(std::vector<double> v);  // of the values (0 for none)

double forward_ms(const model::Gpt& gpt, int64_t batch, int64_t q, int64_t prefix, int reps,
                  const model::Condition& cond);
// `graph`: replay a captured graph instead; -1 when this build or device has none.
double fixed_forward_ms(const model::Gpt& gpt, int64_t batch, int64_t q, int64_t prefix, int reps,
                        const model::Condition& cond, bool graph);
// The GPT's matrices: every layer's and the output head's (what a forward multiplies each row by).
std::vector<at::Tensor> matrix_weights(const model::Gpt& gpt);
// The same forward timed part by part (model/cpu/forward_profile.h): {"parts": ms per forward of
// each part, "products_ms": their matrix products' sum}, the mean of `reps` runs after two
// warm-ups; empty where the lean CPU path does not run.
nlohmann::json forward_parts(const model::Gpt& gpt, int64_t batch, int64_t q, int64_t prefix,
                             int reps, const model::Condition& cond);
// The products of one forward of `rows` rows (every layer's matrices and the output head) through
// libtorch's bf16 matmul, which runs oneDNN's kernels (AMX or AVX512-BF16 where the CPU has them):
// ms per forward, the median of `reps`, against which the lean path's own bf16 kernels are
// measured. -1 where the model is not bf16 or libtorch does not take oneDNN for it.
double onednn_products_ms(const model::Gpt& gpt, int64_t rows, int reps);
// One call of the parallel head (every level of a tree), median of `reps`.
double parallel_call_ms(const model::ParallelHead& head, int reps);
double head_level_ms(const model::Drafter& head, const model::Gpt& gpt, int64_t batch, int64_t q,
                     int64_t prefix, int reps);

}  // namespace adtree::cli
