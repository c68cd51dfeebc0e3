// y = x @ w^T from bf16 weights, for the lean CPU path of a bf16 model
// (docs/design/ARCHITECTURE.md, "Lean CPU path"): half the bytes of the fp32 panels per weight,
// which is what a decoding step on a small model waits for. Layout: panels of 16 output rows as in
// packed_gemm.h, but k in adjacent pairs: per k-pair one 64-byte line holds the 16 outputs'
// (w[o][2j], w[o][2j+1]) side by side, the operand that the AVX512-BF16 dot product (vdpbf16ps)
// takes for 16 fp32 accumulators. An odd input width is padded with a zero column. Arithmetic, the
// same in every variant: each input row is rounded to bf16 (round to nearest even) once per call,
// so every product of two bf16 values is exact in fp32, and each output is accumulated in fp32 per
// k-pair as acc += x[2j+1] w[2j+1], then acc += x[2j] w[2j] (vdpbf16ps's order). The CPUs without
// AVX512-BF16 widen the weights to fp32 by a 16-bit shift and use plain FMAs (AVX-512, AVX2,
// portable). An output row's value depends on its own input row only, never on how many rows share
// the call or which register tile it lands in.
#pragma once
#include "model/cpu/packed_weight.h"

namespace adtree::model {

// packed_gemm for bf16 panels (packed_gemm calls it for them): the variant packed_kernel() names.
void packed_gemm_bf16(const float* x, int64_t rows, const PackedWeight& w, const float* bias,
                      float* y);

// x [n] rounded to bf16 as round_to_bf16 does and packed as ceil(n / 2) k-pair words (x[2j] in
// the low half, x[2j + 1] or a zero in the high one): a product's input row as its kernels read it.
void round_to_bf16_pairs(const float* x, int64_t n, uint32_t* pairs);

}  // namespace adtree::model
