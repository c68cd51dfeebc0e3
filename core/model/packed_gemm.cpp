#include "model/packed_gemm.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstring>

#include "util/error.h"

namespace adtree::model {

namespace {
typedef float v8 __attribute__((vector_size(32)));

// R input rows x one 16-output panel: acc[r][0..1] over every k. R <= 6 keeps the 12
// accumulators, two weight vectors and one broadcast in the 16 AVX registers.
template <int R>
__attribute__((always_inline)) inline void tile(const float* x, int64_t in, const float* panel,
                                                const float* bias, float* out, int64_t out_stride,
                                                int64_t n_valid) {
  v8 acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = v8{0, 0, 0, 0, 0, 0, 0, 0};
  for (int64_t k = 0; k < in; ++k) {
    v8 w0, w1;
    __builtin_memcpy(&w0, panel + k * kPanelWidth, sizeof(v8));
    __builtin_memcpy(&w1, panel + k * kPanelWidth + 8, sizeof(v8));
    for (int r = 0; r < R; ++r) {
      const float s = x[r * in + k];
      const v8 b = {s, s, s, s, s, s, s, s};
      acc[r][0] += b * w0;
      acc[r][1] += b * w1;
    }
  }
  float tmp[kPanelWidth];
  for (int r = 0; r < R; ++r) {
    __builtin_memcpy(tmp, &acc[r][0], sizeof(v8));
    __builtin_memcpy(tmp + 8, &acc[r][1], sizeof(v8));
    if (bias) {
      for (int64_t o = 0; o < n_valid; ++o) tmp[o] += bias[o];
    }
    std::memcpy(out + r * out_stride, tmp, sizeof(float) * size_t(n_valid));
  }
}

// Panels [p_begin, p_end) for every row, six rows at a time (the weights of a panel stay in L1
// while its row tiles pass over them).
__attribute__((always_inline)) inline void panels(const float* x, int64_t rows,
                                                  const PackedWeight& w, const float* bias,
                                                  float* y, int64_t p_begin, int64_t p_end) {
  const float* base = w.panels.data_ptr<float>();
  for (int64_t p = p_begin; p < p_end; ++p) {
    const float* panel = base + p * w.in * kPanelWidth;
    const int64_t o0 = p * kPanelWidth, n_valid = std::min(kPanelWidth, w.n_out - o0);
    const float* b = bias ? bias + o0 : nullptr;
    int64_t r = 0;
    for (; r + 6 <= rows; r += 6)
      tile<6>(x + r * w.in, w.in, panel, b, y + r * w.n_out + o0, w.n_out, n_valid);
    const float* xr = x + r * w.in;
    float* yr = y + r * w.n_out + o0;
    switch (rows - r) {
      case 5:
        tile<5>(xr, w.in, panel, b, yr, w.n_out, n_valid);
        break;
      case 4:
        tile<4>(xr, w.in, panel, b, yr, w.n_out, n_valid);
        break;
      case 3:
        tile<3>(xr, w.in, panel, b, yr, w.n_out, n_valid);
        break;
      case 2:
        tile<2>(xr, w.in, panel, b, yr, w.n_out, n_valid);
        break;
      case 1:
        tile<1>(xr, w.in, panel, b, yr, w.n_out, n_valid);
        break;
      default:
        break;
    }
  }
}

__attribute__((target("avx2,fma"))) void panels_avx2(const float* x, int64_t rows,
                                                     const PackedWeight& w, const float* bias,
                                                     float* y, int64_t p0, int64_t p1) {
  panels(x, rows, w, bias, y, p0, p1);
}
void panels_portable(const float* x, int64_t rows, const PackedWeight& w, const float* bias,
                     float* y, int64_t p0, int64_t p1) {
  panels(x, rows, w, bias, y, p0, p1);
}

bool have_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
}
}  // namespace

PackedWeight pack_weight(const at::Tensor& w) {
  PackedWeight pw;
  if (!w.defined() || w.dim() != 2 || w.scalar_type() != at::kFloat || !w.device().is_cpu()) {
    return pw;
  }
  pw.n_out = w.size(0);
  pw.in = w.size(1);
  const int64_t n_panels = (pw.n_out + kPanelWidth - 1) / kPanelWidth;
  // [n_out padded, in] -> [panels, 16, in] -> [panels, in, 16]
  auto padded = at::zeros({n_panels * kPanelWidth, pw.in}, w.options());
  padded.narrow(0, 0, pw.n_out).copy_(w);
  pw.panels = padded.view({n_panels, kPanelWidth, pw.in}).transpose(1, 2).contiguous();
  return pw;
}

void packed_gemm(const float* x, int64_t rows, const PackedWeight& w, const float* bias, float* y) {
  const int64_t n_panels = w.panels.size(0);
  const auto run = have_avx2() ? panels_avx2 : panels_portable;
  at::parallel_for(0, n_panels, 4, [&](int64_t b, int64_t e) { run(x, rows, w, bias, y, b, e); });
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
