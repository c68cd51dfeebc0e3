#include "model/packed_gemm.h"

#include <algorithm>
#include <cstring>

#include "util/error.h"
#include "util/worker_pool.h"

namespace adtree::model {

namespace {
typedef float v8 __attribute__((vector_size(32)));

// R input rows x one 16-output panel over k in [k0, k1): part[r][0..15] += x[r][k] w[k][0..15].
// R <= 6 keeps the 12 accumulators, two weight vectors and one broadcast in the 16 AVX registers.
template <int R>
__attribute__((always_inline)) inline void tile(const float* x, int64_t in, const float* panel,
                                                int64_t k0, int64_t k1, float* part) {
  v8 acc[R][2];
  for (int r = 0; r < R; ++r) {
    __builtin_memcpy(&acc[r][0], part + r * kPanelWidth, sizeof(v8));
    __builtin_memcpy(&acc[r][1], part + r * kPanelWidth + 8, sizeof(v8));
  }
  for (int64_t k = k0; k < k1; ++k) {
    // One cache line of weights per k: ask for the line 2 KiB ahead, which the hardware
    // prefetcher alone does not keep up with when the weights stream from DRAM (a 2-row step).
    __builtin_prefetch(panel + (k + 32) * kPanelWidth);
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
  for (int r = 0; r < R; ++r) {
    __builtin_memcpy(part + r * kPanelWidth, &acc[r][0], sizeof(v8));
    __builtin_memcpy(part + r * kPanelWidth + 8, &acc[r][1], sizeof(v8));
  }
}

__attribute__((always_inline)) inline void tile_rows(int64_t n, const float* x, int64_t in,
                                                     const float* panel, int64_t k0, int64_t k1,
                                                     float* part) {
  switch (n) {
    case 6:
      return tile<6>(x, in, panel, k0, k1, part);
    case 5:
      return tile<5>(x, in, panel, k0, k1, part);
    case 4:
      return tile<4>(x, in, panel, k0, k1, part);
    case 3:
      return tile<3>(x, in, panel, k0, k1, part);
    case 2:
      return tile<2>(x, in, panel, k0, k1, part);
    case 1:
      return tile<1>(x, in, panel, k0, k1, part);
    default:
      return;
  }
}

// Rows are taken 48 at a time, and each panel in k-blocks of 256 (16 KiB): every six-row tile of
// the group passes over a block while it sits in L1, so the weights stream from memory once per
// 48 rows and that stream overlaps the arithmetic instead of preceding it.
constexpr int64_t kGroupRows = 48, kBlockK = 256;

// Panels [p_begin, p_end) for every row.
__attribute__((always_inline)) inline void panels(const float* x, int64_t rows,
                                                  const PackedWeight& w, const float* bias,
                                                  float* y, int64_t p_begin, int64_t p_end) {
  const float* base = w.panels.data_ptr<float>();
  float part[kGroupRows * kPanelWidth];
  for (int64_t p = p_begin; p < p_end; ++p) {
    const float* panel = base + p * w.in * kPanelWidth;
    const int64_t o0 = p * kPanelWidth, n_valid = std::min(kPanelWidth, w.n_out - o0);
    for (int64_t g = 0; g < rows; g += kGroupRows) {
      const int64_t n_rows = std::min(kGroupRows, rows - g);
      std::memset(part, 0, sizeof(float) * size_t(n_rows * kPanelWidth));
      for (int64_t k0 = 0; k0 < w.in; k0 += kBlockK) {
        const int64_t k1 = std::min(w.in, k0 + kBlockK);
        for (int64_t r = 0; r < n_rows; r += 6) {
          tile_rows(std::min<int64_t>(6, n_rows - r), x + (g + r) * w.in, w.in, panel, k0, k1,
                    part + r * kPanelWidth);
        }
      }
      for (int64_t r = 0; r < n_rows; ++r) {
        float* out = y + (g + r) * w.n_out + o0;
        const float* acc = part + r * kPanelWidth;
        for (int64_t o = 0; o < n_valid; ++o) out[o] = acc[o] + (bias ? bias[o0 + o] : 0.0f);
      }
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
  // Below ~64k multiply-adds (a few microseconds) handing work to another thread costs more than
  // it saves; above, the panels are shared out, a few chunks per thread so that a late or busy
  // worker leaves its share to the others.
  auto& pool = WorkerPool::shared();
  if (pool.threads() == 1 || rows * w.in * w.n_out < (int64_t(1) << 16)) {
    run(x, rows, w, bias, y, 0, n_panels);
    return;
  }
  const int64_t chunk = std::max<int64_t>(1, n_panels / (4 * pool.threads()));
  pool.run(n_panels, chunk, [&](int64_t b, int64_t e) { run(x, rows, w, bias, y, b, e); });
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
