// y = x @ w^T for a few rows (a decoding step: 2 rows with CFG; a small tree: up to 16), fp32 CPU.
// Decoding is memory-bound: the step is the time to stream the weights once. BLAS's GEMM packs
// the weight matrix first (~7 GB/s end to end here) and per-row GEMV reads it once per row; this
// kernel reads each weight row once for all input rows (docs/PERFORMANCE.md has the numbers).
#pragma once
#include <ATen/ATen.h>

namespace adtree::model {

constexpr int64_t kSmallGemmMaxRows = 16;

// x [..., in] contiguous fp32 CPU with at most kSmallGemmMaxRows rows, w [out, in] contiguous.
at::Tensor small_gemm(const at::Tensor& x, const at::Tensor& w);

// The same kernel on raw rows: y [rows, n_out] = x [rows, in] @ w [n_out, in]^T, any row count
// (each group of rows the kernel holds in registers streams the weights once).
void small_gemm_rows(const float* x, int64_t rows, int64_t in, const float* w, int64_t n_out,
                     float* y);

// x [..., in] @ w^T (+ b) for inference: small_gemm where it applies (fp32 CPU, few rows,
// contiguous), at::linear otherwise. The target's layers and the draft head both go through it.
at::Tensor inference_linear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b = {});

}  // namespace adtree::model
