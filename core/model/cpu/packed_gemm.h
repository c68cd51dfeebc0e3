// y = x @ w^T for the CPU inference path (decoding blocks of 1 to a few hundred rows), from weights
// packed once at load.
// The weight [n_out, in] is stored as panels of 16 output rows, k-major (panel p holds, for each
// input index k, the 16 weights w[16p .. 16p+15][k] side by side). A 6-row x 16-output register
// tile then needs no horizontal sums: per k it loads one cache line of weights, broadcasts six
// input values and issues twelve FMAs, so each weight is read once per six input rows (the
// previous small-row kernel: once per row group of eight, with eight horizontal sums per output)
// and the arithmetic runs near the FMA units' rate. AVX-512 (two panels per tile, 12 rows) or
// AVX2+FMA chosen at run time, with the AVX2 code compiled for baseline x86-64 as the fallback.
// docs/PERFORMANCE.md has the measurements. A bf16 model's panels hold bf16 k-pairs instead
// (model/cpu/packed_bf16.h); packed_gemm takes either.
#pragma once
#include <ATen/ATen.h>

#include <cstdint>
#include <functional>

#include "model/cpu/cpu_kernel.h"
#include "model/cpu/packed_weight.h"

namespace adtree::model {

// y [rows, n_out] = x [rows, in] @ w^T (+ bias [n_out] if given), any row count; output panels
// are shared out by the worker pool (util/worker_pool.h).
void packed_gemm(const float* x, int64_t rows, const PackedWeight& w, const float* bias, float* y);

// A matrix [n_out, in] in panel layout seen through raw pointers: panel p's row k (16 floats, the
// outputs 16p .. 16p+15 at input k) starts at data + p * panel_stride + k * k_stride. A packed
// weight has k_stride 16 and panel_stride in * 16. Rows V [n, hd] of a value cache, read as the
// matrix of P @ V (outputs d, inputs j), are already in this layout: panel_stride 16, k_stride hd.
// Past n_out the panels must hold zeros or readable memory (their outputs are dropped).
struct PanelView {
  const float* data = nullptr;
  int64_t n_out = 0, in = 0, panel_stride = 0, k_stride = kPanelWidth;
};
PanelView view_of(const PackedWeight& w);  // fp32 panels only

// y rows (y_stride apart) = x rows (x_stride apart) @ w^T on the calling thread: the attention's
// products inside a job of the worker pool.
void panel_gemm(const float* x, int64_t x_stride, int64_t rows, const PanelView& w, float* y,
                int64_t y_stride);

// Rows src [n, in] (row stride `stride`) into panel layout at out (ceil(n / 16) * in * 16
// floats, zeros past n): the keys of one attention head, packed once for all its queries.
void pack_rows(const float* src, int64_t n, int64_t in, int64_t stride, float* out);

// The same on tensors: x [..., in] contiguous fp32 CPU -> [..., n_out].
at::Tensor packed_linear(const at::Tensor& x, const PackedWeight& w, const at::Tensor& bias = {});

}  // namespace adtree::model
