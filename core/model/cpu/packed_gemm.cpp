#include "model/cpu/packed_gemm.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

#include "model/cpu/cpu_kernel.h"
#include "model/cpu/packed_bf16.h"
#include "util/error.h"
#include "util/worker_pool.h"

namespace adtree::model {

namespace {
typedef float v8 __attribute__((vector_size(32)));

// One product's operands: y rows (y_stride apart) = x rows (x_stride apart) @ w^T (+ bias).
struct GemmArgs {
  const float* x;
  int64_t x_stride, rows;
  PanelView w;
  const float* bias;
  float* y;
  int64_t y_stride;
};

// Rows [g, g + n_rows) of outputs [o0, o0 + n_valid) from the accumulated tile rows (`width`
// floats each), plus the bias.
inline void store(const GemmArgs& a, const float* part, int64_t width, int64_t g, int64_t n_rows,
                  int64_t o0, int64_t n_valid) {
  for (int64_t r = 0; r < n_rows; ++r) {
    float* out = a.y + (g + r) * a.y_stride + o0;
    const float* acc = part + r * width;
    for (int64_t o = 0; o < n_valid; ++o) out[o] = acc[o] + (a.bias ? a.bias[o0 + o] : 0.0f);
  }
}

// R input rows x one 16-output panel over k in [k0, k1): part[r][0..15] += x[r][k] w[k][0..15].
// R <= 6 keeps the 12 accumulators, two weight vectors and one broadcast in the 16 AVX registers.
template <int R>
__attribute__((always_inline)) inline void tile(const float* x, int64_t xs, const float* panel,
                                                int64_t ks, int64_t k0, int64_t k1, float* part) {
  v8 acc[R][2];
  for (int r = 0; r < R; ++r) {
    __builtin_memcpy(&acc[r][0], part + r * kPanelWidth, sizeof(v8));
    __builtin_memcpy(&acc[r][1], part + r * kPanelWidth + 8, sizeof(v8));
  }
  for (int64_t k = k0; k < k1; ++k) {
    // One cache line of weights per k: ask for the line 2 KiB ahead, which the hardware
    // prefetcher alone does not keep up with when the weights stream from DRAM (a 2-row step).
    __builtin_prefetch(panel + (k + 32) * ks);
    v8 w0, w1;
    __builtin_memcpy(&w0, panel + k * ks, sizeof(v8));
    __builtin_memcpy(&w1, panel + k * ks + 8, sizeof(v8));
    for (int r = 0; r < R; ++r) {
      const float s = x[r * xs + k];
      const v8 b = {s, s, s, s, s, s, s, s};
      acc[r][0] += b * w0;
      acc[r][1] += b * w1;
    }
  }
  for (int r = 0; r < R; ++r) {
    __builtin_memcpy(part + r * kPanelWidth, &acc[r][0], sizeof(v8));
    __builtin_memcpy(part + r * kPanelWidth + 8, &acc[r][1], sizeof(v8));
  }
}

// Runs tile<n> for a runtime n in 1 .. R (the AVX-512 path dispatches the same way).
template <int R>
__attribute__((always_inline)) inline void tile_rows(int64_t n, const float* x, int64_t xs,
                                                     const float* panel, int64_t ks, int64_t k0,
                                                     int64_t k1, float* part) {
  if constexpr (R > 0) {
    if (n == R) return tile<R>(x, xs, panel, ks, k0, k1, part);
    return tile_rows<R - 1>(n, x, xs, panel, ks, k0, k1, part);
  }
}

// Rows are taken 48 at a time, and each panel in k-blocks of 256 (16 KiB): every six-row tile of
// the group passes over a block while it sits in L1, so the weights stream from memory once per
// 48 rows and that stream overlaps the arithmetic instead of preceding it.
constexpr int64_t kGroupRows = 48, kBlockK = 256;

// Panels [p_begin, p_end) for every row.
__attribute__((always_inline)) inline void panels(const GemmArgs& a, int64_t p_begin,
                                                  int64_t p_end) {
  const PanelView& w = a.w;
  float part[kGroupRows * kPanelWidth];
  for (int64_t p = p_begin; p < p_end; ++p) {
    const float* panel = w.data + p * w.panel_stride;
    const int64_t o0 = p * kPanelWidth, n_valid = std::min(kPanelWidth, w.n_out - o0);
    for (int64_t g = 0; g < a.rows; g += kGroupRows) {
      const int64_t n_rows = std::min(kGroupRows, a.rows - g);
      std::memset(part, 0, sizeof(float) * size_t(n_rows * kPanelWidth));
      for (int64_t k0 = 0; k0 < w.in; k0 += kBlockK) {
        const int64_t k1 = std::min(w.in, k0 + kBlockK);
        for (int64_t r = 0; r < n_rows; r += 6) {
          tile_rows<6>(std::min<int64_t>(6, n_rows - r), a.x + (g + r) * a.x_stride, a.x_stride,
                       panel, w.k_stride, k0, k1, part + r * kPanelWidth);
        }
      }
      store(a, part, kPanelWidth, g, n_rows, o0, n_valid);
    }
  }
}

__attribute__((target("avx2,fma"))) void panels_avx2(const GemmArgs& a, int64_t p0, int64_t p1) {
  panels(a, p0, p1);
}
void panels_portable(const GemmArgs& a, int64_t p0, int64_t p1) {
  panels(a, p0, p1);
}

// AVX-512: a panel row is one 16-lane register, so a tile covers two panels (32 outputs) and up
// to 12 rows: 24 accumulators, two weight vectors and a broadcast of the 32 registers. Per k,
// two weight loads and R broadcasts feed 2R FMAs of twice the AVX2 width.
typedef float v16 __attribute__((vector_size(64)));
constexpr int kRows512 = 12;
constexpr int64_t kAhead512 = 96;  // cache lines (6 KiB) of each panel's stream

template <int R>
__attribute__((always_inline)) inline void tile512(const float* x, int64_t xs, const float* pa,
                                                   const float* pb, int64_t ks, int64_t k0,
                                                   int64_t k1, float* part) {
  v16 a[R], b[R];
  for (int r = 0; r < R; ++r) {
    __builtin_memcpy(&a[r], part + r * 32, sizeof(v16));
    __builtin_memcpy(&b[r], part + r * 32 + 16, sizeof(v16));
  }
  for (int64_t k = k0; k < k1; ++k) {
    __builtin_prefetch(pa + (k + kAhead512) * ks);
    __builtin_prefetch(pb + (k + kAhead512) * ks);
    v16 wa, wb;
    __builtin_memcpy(&wa, pa + k * ks, sizeof(v16));
    __builtin_memcpy(&wb, pb + k * ks, sizeof(v16));
    for (int r = 0; r < R; ++r) {
      const float s = x[r * xs + k];
      const v16 bc = {s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s};
      a[r] += bc * wa;
      b[r] += bc * wb;
    }
  }
  for (int r = 0; r < R; ++r) {
    __builtin_memcpy(part + r * 32, &a[r], sizeof(v16));
    __builtin_memcpy(part + r * 32 + 16, &b[r], sizeof(v16));
  }
}

template <int R>
__attribute__((target("avx512f"))) void tile512_rows(int64_t n, const float* x, int64_t xs,
                                                     const float* pa, const float* pb, int64_t ks,
                                                     int64_t k0, int64_t k1, float* part) {
  if constexpr (R > 0) {
    if (n == R) return tile512<R>(x, xs, pa, pb, ks, k0, k1, part);
    return tile512_rows<R - 1>(n, x, xs, pa, pb, ks, k0, k1, part);
  }
}

// Panels [p_begin, p_end) two at a time (an odd last panel is paired with itself and its second
// half dropped), rows in groups and k in blocks as in panels().
__attribute__((target("avx512f"))) void panels_avx512(const GemmArgs& a, int64_t p_begin,
                                                      int64_t p_end) {
  const PanelView& w = a.w;
  float part[kGroupRows * 32];
  for (int64_t p = p_begin; p < p_end; p += 2) {
    const float* pa = w.data + p * w.panel_stride;
    const float* pb = p + 1 < p_end ? pa + w.panel_stride : pa;
    const int64_t o0 = p * kPanelWidth;
    const int64_t n_valid = std::min((p + 1 < p_end ? 2 : 1) * kPanelWidth, w.n_out - o0);
    for (int64_t g = 0; g < a.rows; g += kGroupRows) {
      const int64_t n_rows = std::min(kGroupRows, a.rows - g);
      std::memset(part, 0, sizeof(float) * size_t(n_rows * 32));
      for (int64_t k0 = 0; k0 < w.in; k0 += kBlockK) {
        const int64_t k1 = std::min(w.in, k0 + kBlockK);
        for (int64_t r = 0; r < n_rows; r += kRows512) {
          tile512_rows<kRows512>(std::min<int64_t>(kRows512, n_rows - r),
                                 a.x + (g + r) * a.x_stride, a.x_stride, pa, pb, w.k_stride, k0, k1,
                                 part + r * 32);
        }
      }
      store(a, part, 32, g, n_rows, o0, n_valid);
    }
  }
}

using PanelsFn = void (*)(const GemmArgs&, int64_t, int64_t);

PanelsFn panels_fn(CpuKernel k) {
  switch (k) {
    case CpuKernel::Amx:  // fp32 panels: nothing for the BF16 dot product or the tiles to do
    case CpuKernel::Avx512Bf16:
    case CpuKernel::Avx512:
      return panels_avx512;
    case CpuKernel::Avx2:
      return panels_avx2;
    default:
      return panels_portable;
  }
}
}  // namespace

PanelView view_of(const PackedWeight& w) {
  if (w.bf16()) throw Error("view_of: bf16 panels have no fp32 view");
  return {w.panels.data_ptr<float>(), w.n_out, w.in, w.in * kPanelWidth, kPanelWidth};
}

void panel_gemm(const float* x, int64_t x_stride, int64_t rows, const PanelView& w, float* y,
                int64_t y_stride) {
  const int64_t n_panels = (w.n_out + kPanelWidth - 1) / kPanelWidth;
  panels_fn(packed_kernel())({x, x_stride, rows, w, nullptr, y, y_stride}, 0, n_panels);
}

void pack_rows(const float* src, int64_t n, int64_t in, int64_t stride, float* out) {
  const int64_t n_panels = (n + kPanelWidth - 1) / kPanelWidth;
  for (int64_t p = 0; p < n_panels; ++p) {
    float* panel = out + p * in * kPanelWidth;
    for (int64_t l = 0; l < kPanelWidth; ++l) {
      const int64_t row = p * kPanelWidth + l;
      for (int64_t k = 0; k < in; ++k) {
        panel[k * kPanelWidth + l] = row < n ? src[row * stride + k] : 0.0f;
      }
    }
  }
}

void packed_gemm(const float* x, int64_t rows, const PackedWeight& w, const float* bias, float* y) {
  if (w.bf16()) return packed_gemm_bf16(x, rows, w, bias, y);
  const auto run = panels_fn(packed_kernel());
  const GemmArgs args{x, w.in, rows, view_of(w), bias, y, w.n_out};
  run_panels(w.panels.size(0), rows * w.in * w.n_out,
             [&](int64_t b, int64_t e) { run(args, b, e); });
}

at::Tensor packed_linear(const at::Tensor& x, const PackedWeight& w, const at::Tensor& bias) {
  if (!w.defined() || x.size(-1) != w.in || !x.is_contiguous() || x.scalar_type() != at::kFloat ||
      !x.device().is_cpu() || (bias.defined() && !bias.is_contiguous())) {
    throw Error("packed_linear: needs contiguous fp32 CPU rows and a matching packed weight");
  }
  auto sizes = x.sizes().vec();
  sizes.back() = w.n_out;
  auto y = at::empty(sizes, x.options());
  packed_gemm(x.data_ptr<float>(), x.numel() / w.in, w,
              bias.defined() ? bias.data_ptr<float>() : nullptr, y.data_ptr<float>());
  return y;
}

}  // namespace adtree::model
