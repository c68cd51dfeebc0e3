#include "model/cpu/packed_bf16.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "model/cpu/cpu_kernel.h"
#include "model/cpu/packed_amx.h"

namespace adtree::model {

namespace {
// One product's operands. The input rows, rounded to bf16 once per call: as k-pairs (one 32-bit
// word per pair, the odd k in the high half) for the BF16 kernel, as floats for the others.
struct Bf16Args {
  const uint32_t* xp;
  const float* xf;
  int64_t x_stride, rows;  // x_stride in pairs (xp) or floats (xf)
  const uint32_t* w;       // panel p, pair j: w + (p * pairs + j) * 16
  int64_t n_out, pairs;
  const float* bias;
  float* y;
};

constexpr int64_t kBf16GroupRows = 48;  // rows sharing one pass over a k-block, as packed_gemm.cpp
constexpr int64_t kBlockPairs = 128;    // 8 KiB of one panel: two panels and the tile's x in L1
constexpr int64_t kAhead = 96;          // prefetch distance in lines (pairs) of a panel's stream

// The fallbacks on GCC vector types of L lanes: per k-pair, the line's 32-bit words hold
// (w[2j] low, w[2j+1] high); shifting left by 16 and masking the low half away are the two
// weights widened exactly to fp32. A tile is two L-lane accumulators per row: two panels for
// L = 16 (w0, w1: their lines), one panel for L = 8 (w0, w1: the halves of its line). Products of
// bf16 values are exact in fp32, so a fused or a separate multiply-add gives the same sums.
template <typename VF, typename VU, int R>
__attribute__((always_inline)) inline void tile_wide(const float* x, int64_t xs, const uint32_t* w0,
                                                     const uint32_t* w1, int64_t k0, int64_t k1,
                                                     float* part) {
  constexpr int L = sizeof(VF) / sizeof(float);
  VF acc[R][2];
  for (int r = 0; r < R; ++r) {
    __builtin_memcpy(&acc[r][0], part + r * 2 * L, sizeof(VF));
    __builtin_memcpy(&acc[r][1], part + r * 2 * L + L, sizeof(VF));
  }
  const VU high = VU{} + 0xffff0000u;
  for (int64_t j = k0; j < k1; ++j) {
    __builtin_prefetch(w0 + (j + kAhead) * 16);
    __builtin_prefetch(w1 + (j + kAhead) * 16);
    VU u0, u1;
    __builtin_memcpy(&u0, w0 + j * 16, sizeof(VU));
    __builtin_memcpy(&u1, w1 + j * 16, sizeof(VU));
    const VF odd0 = (VF)(u0 & high), odd1 = (VF)(u1 & high);
    const VF even0 = (VF)(u0 << 16), even1 = (VF)(u1 << 16);
    for (int r = 0; r < R; ++r) {
      const float xo = x[r * xs + 2 * j + 1], xe = x[r * xs + 2 * j];
      acc[r][0] += xo * odd0;  // vdpbf16ps's order: the odd k first
      acc[r][0] += xe * even0;
      acc[r][1] += xo * odd1;
      acc[r][1] += xe * even1;
    }
  }
  for (int r = 0; r < R; ++r) {
    __builtin_memcpy(part + r * 2 * L, &acc[r][0], sizeof(VF));
    __builtin_memcpy(part + r * 2 * L + L, &acc[r][1], sizeof(VF));
  }
}

template <typename VF, typename VU, int R>
__attribute__((always_inline)) inline void tile_wide_rows(int64_t n, const float* x, int64_t xs,
                                                          const uint32_t* w0, const uint32_t* w1,
                                                          int64_t k0, int64_t k1, float* part) {
  if constexpr (R > 0) {
    if (n == R) return tile_wide<VF, VU, R>(x, xs, w0, w1, k0, k1, part);
    return tile_wide_rows<VF, VU, R - 1>(n, x, xs, w0, w1, k0, k1, part);
  }
}

// AVX512-BF16: per k-pair one vdpbf16ps per row and panel, the row's pair broadcast as one word.
// Two panels and up to 12 rows: 24 accumulators, two weight lines and a broadcast.
template <int R>
__attribute__((target("avx512f,avx512bf16"), always_inline)) inline void tile_dp(
    const uint32_t* x, int64_t xs, const uint32_t* pa, const uint32_t* pb, int64_t k0, int64_t k1,
    float* part) {
  __m512 a[R], b[R];
  for (int r = 0; r < R; ++r) {
    a[r] = _mm512_loadu_ps(part + r * 32);
    b[r] = _mm512_loadu_ps(part + r * 32 + 16);
  }
  for (int64_t j = k0; j < k1; ++j) {
    __builtin_prefetch(pa + (j + kAhead) * 16);
    __builtin_prefetch(pb + (j + kAhead) * 16);
    const __m512i wa = _mm512_loadu_si512(pa + j * 16), wb = _mm512_loadu_si512(pb + j * 16);
    for (int r = 0; r < R; ++r) {
      const __m512i xr = _mm512_set1_epi32(int(x[r * xs + j]));
      a[r] = _mm512_dpbf16_ps(a[r], (__m512bh)xr, (__m512bh)wa);
      b[r] = _mm512_dpbf16_ps(b[r], (__m512bh)xr, (__m512bh)wb);
    }
  }
  for (int r = 0; r < R; ++r) {
    _mm512_storeu_ps(part + r * 32, a[r]);
    _mm512_storeu_ps(part + r * 32 + 16, b[r]);
  }
}

template <int R>
__attribute__((target("avx512f,avx512bf16"))) void tile_dp_rows(int64_t n, const uint32_t* x,
                                                                int64_t xs, const uint32_t* pa,
                                                                const uint32_t* pb, int64_t k0,
                                                                int64_t k1, float* part) {
  if constexpr (R > 0) {
    if (n == R) return tile_dp<R>(x, xs, pa, pb, k0, k1, part);
    return tile_dp_rows<R - 1>(n, x, xs, pa, pb, k0, k1, part);
  }
}

// Panels [p_begin, p_end) for every row, in tiles of Width outputs (two panels for the 16-lane
// kernels, an odd last panel paired with itself and its copy dropped) and R rows; rows in groups
// and k in blocks as packed_gemm.cpp does, so each row's sum runs over k in the same order
// whatever the row count.
template <typename VF, typename VU, int R, bool Dp>
__attribute__((always_inline)) inline void panels(const Bf16Args& a, int64_t p_begin,
                                                  int64_t p_end) {
  constexpr int64_t width = 2 * int64_t(sizeof(VF) / sizeof(float)), step = width / kPanelWidth;
  const int64_t panel_words = a.pairs * 16;
  float part[kBf16GroupRows * width];
  for (int64_t p = p_begin; p < p_end; p += step) {
    const uint32_t* pa = a.w + p * panel_words;
    const uint32_t* pb = step == 1 ? pa + 8 : p + 1 < p_end ? pa + panel_words : pa;
    const int64_t o0 = p * kPanelWidth;
    const int64_t n_valid = std::min(std::min(step, p_end - p) * kPanelWidth, a.n_out - o0);
    for (int64_t g = 0; g < a.rows; g += kBf16GroupRows) {
      const int64_t n_rows = std::min(kBf16GroupRows, a.rows - g);
      std::memset(part, 0, sizeof(float) * size_t(n_rows * width));
      for (int64_t k0 = 0; k0 < a.pairs; k0 += kBlockPairs) {
        const int64_t k1 = std::min(a.pairs, k0 + kBlockPairs);
        for (int64_t r = 0; r < n_rows; r += R) {
          const int64_t n = std::min<int64_t>(R, n_rows - r), row = g + r;
          if constexpr (Dp) {
            tile_dp_rows<R>(n, a.xp + row * a.x_stride, a.x_stride, pa, pb, k0, k1,
                            part + r * width);
          } else {
            tile_wide_rows<VF, VU, R>(n, a.xf + row * a.x_stride, a.x_stride, pa, pb, k0, k1,
                                      part + r * width);
          }
        }
      }
      for (int64_t r = 0; r < n_rows; ++r) {
        float* out = a.y + (g + r) * a.n_out + o0;
        for (int64_t o = 0; o < n_valid; ++o) {
          out[o] = part[r * width + o] + (a.bias ? a.bias[o0 + o] : 0.0f);
        }
      }
    }
  }
}

typedef float v8 __attribute__((vector_size(32)));
typedef uint32_t v8u __attribute__((vector_size(32)));
typedef float v16 __attribute__((vector_size(64)));
typedef uint32_t v16u __attribute__((vector_size(64)));

__attribute__((target("avx512f,avx512bf16"))) void panels_dp(const Bf16Args& a, int64_t p0,
                                                             int64_t p1) {
  panels<v16, v16u, 12, true>(a, p0, p1);
}
__attribute__((target("avx512f"))) void bf16_panels_avx512(const Bf16Args& a, int64_t p0,
                                                           int64_t p1) {
  panels<v16, v16u, 12, false>(a, p0, p1);
}
// Eight lanes: 8 accumulators, four widened weight vectors and two broadcasts in 16 registers.
__attribute__((target("avx2,fma"))) void bf16_panels_avx2(const Bf16Args& a, int64_t p0,
                                                          int64_t p1) {
  panels<v8, v8u, 4, false>(a, p0, p1);
}
void bf16_panels_portable(const Bf16Args& a, int64_t p0, int64_t p1) {
  panels<v8, v8u, 4, false>(a, p0, p1);
}

// The calling thread's rounded input rows (pairs for the BF16 kernel, floats for the others):
// grown to the largest call, then reused.
thread_local std::vector<uint32_t> t_pairs;
thread_local std::vector<float> t_floats;

const uint32_t* panel_words(const PackedWeight& w) {
  return reinterpret_cast<const uint32_t*>(w.panels.data_ptr());
}

float widen(uint32_t bf16) {
  const uint32_t bits = bf16 << 16;  // a bf16's bits are its float's top half
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}
// 16 floats rounded to bf16 as round_to_bf16 does (nearest even, NaN kept quiet), packed as the
// 8 k-pair words the dot-product and tile kernels read: the same bits, 16 at a time.
__attribute__((target("avx512f"))) void round16_to_pairs(const float* src, uint32_t* dst) {
  // GCC vector arithmetic (GCC 12 warns on the shift intrinsics' undefined pass-through operand).
  v16u u;
  __builtin_memcpy(&u, src, sizeof(u));
  const v16u rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const v16u quiet = (u >> 16) | 0x40u;
  const v16u nan = (v16u)((u & 0x7fffffffu) > 0x7f800000u);  // all ones where a NaN
  const v16u bits = (quiet & nan) | (rounded & ~nan);
  __m512i b;
  __builtin_memcpy(&b, &bits, sizeof(b));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), _mm512_maskz_cvtepi32_epi16(0xffff, b));
}

// Rows x [rows, in] rounded to bf16: as k-pairs (pairs, the odd k in the high half) or widened back
// to floats (floats), `stride` words or floats per row.
void round_rows(const float* x, int64_t rows, int64_t in, bool as_pairs, int64_t stride,
                uint32_t* pairs, float* floats) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* src = x + r * in;
    if (as_pairs) {
      round_to_bf16_pairs(src, in, pairs + r * stride);
      continue;
    }
    for (int64_t j = 0; j < (in + 1) / 2; ++j) {
      floats[r * stride + 2 * j] = widen(round_to_bf16(src[2 * j]));
      floats[r * stride + 2 * j + 1] = 2 * j + 1 < in ? widen(round_to_bf16(src[2 * j + 1])) : 0.f;
    }
  }
}
}  // namespace

void round_to_bf16_pairs(const float* x, int64_t n, uint32_t* pairs) {
  int64_t j = 0;
  // A block's rows are converted on the calling thread before the product: 16 at a time where
  // the CPU has AVX-512.
  if (packed_kernel() >= CpuKernel::Avx512) {
    for (; 2 * j + 16 <= n; j += 8) round16_to_pairs(x + 2 * j, pairs + j);
  }
  for (; j < (n + 1) / 2; ++j) {
    const uint32_t lo = round_to_bf16(x[2 * j]);
    const uint32_t hi = 2 * j + 1 < n ? round_to_bf16(x[2 * j + 1]) : 0u;
    pairs[j] = lo | hi << 16;
  }
}

void packed_gemm_bf16(const float* x, int64_t rows, const PackedWeight& w, const float* bias,
                      float* y) {
  const CpuKernel kernel = packed_kernel();
  const bool amx = kernel == CpuKernel::Amx, dp = amx || kernel == CpuKernel::Avx512Bf16;
  const int64_t pairs = (w.in + 1) / 2;
  // The rows rounded to bf16 once (rows * in conversions against rows * in * n_out products);
  // the products then see the same bf16 inputs in every variant. The tiles read whole 16-row
  // blocks: past the last row they read what the buffer holds (zeros, or an earlier call's rows),
  // and those rows' outputs are dropped.
  const int64_t stride = dp ? pairs : 2 * pairs, padded = amx ? (rows + 15) / 16 * 16 : rows;
  auto& pairs_buf = t_pairs;
  auto& floats_buf = t_floats;
  if (dp && int64_t(pairs_buf.size()) < padded * stride) pairs_buf.resize(size_t(padded * stride));
  if (!dp && int64_t(floats_buf.size()) < rows * stride) floats_buf.resize(size_t(rows * stride));
  round_rows(x, rows, w.in, dp, stride, pairs_buf.data(), floats_buf.data());
  if (amx) {
    const AmxArgs args{pairs_buf.data(), stride, rows, panel_words(w), w.n_out, pairs, bias, y};
    run_panels(w.panels.size(0), rows * w.in * w.n_out,
               [&](int64_t b, int64_t e) { panels_amx(args, b, e); });
    return;
  }
  const Bf16Args args{
      pairs_buf.data(), floats_buf.data(), stride, rows, panel_words(w), w.n_out, pairs, bias, y};
  auto run = dp                            ? panels_dp
             : kernel == CpuKernel::Avx512 ? bf16_panels_avx512
             : kernel == CpuKernel::Avx2   ? bf16_panels_avx2
                                           : bf16_panels_portable;
  run_panels(w.panels.size(0), rows * w.in * w.n_out,
             [&](int64_t b, int64_t e) { run(args, b, e); });
}

}  // namespace adtree::model
