#include "model/llamagen/group_norm_nhwc.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <type_traits>
#include <vector>

#include "util/error.h"

namespace adtree::model {

namespace {

constexpr int64_t kPixelsPerTask = 512;  // at::parallel_for's grain

// A pixel's C channels as floats (bf16 widened exactly), and back (bf16 rounded to nearest even,
// as libtorch rounds).
template <typename T>
__attribute__((always_inline)) inline void load_row(const T* src, float* dst, int64_t c) {
  if constexpr (std::is_same_v<T, float>) {
    std::memcpy(dst, src, size_t(c) * sizeof(float));
  } else {
    const uint16_t* s = reinterpret_cast<const uint16_t*>(src);
    uint32_t* d = reinterpret_cast<uint32_t*>(dst);
    for (int64_t i = 0; i < c; ++i) d[i] = uint32_t(s[i]) << 16;
  }
}

template <typename T>
__attribute__((always_inline)) inline void store_row(const float* src, T* dst, int64_t c) {
  if constexpr (std::is_same_v<T, float>) {
    std::memcpy(dst, src, size_t(c) * sizeof(float));
  } else {
    const uint32_t* s = reinterpret_cast<const uint32_t*>(src);
    uint16_t* d = reinterpret_cast<uint16_t*>(dst);
    for (int64_t i = 0; i < c; ++i) d[i] = uint16_t((s[i] + 0x7fffu + ((s[i] >> 16) & 1u)) >> 16);
  }
}

// 16 lanes in GCC's vector types: one AVX-512 register, two AVX2 ones, four SSE ones.
typedef float V16 __attribute__((vector_size(64)));
typedef int32_t I16 __attribute__((vector_size(64)));
constexpr int64_t kLanes = 16;

// x = exp(x) within a few ulp for x in [-87, 88] (clamped there): 2^n p(r), r = x - n ln 2 in
// [-ln2/2, ln2/2], with Cephes' degree-6 polynomial, written on vectors so that it needs no call.
__attribute__((always_inline)) inline void exp_poly(V16& x) {
  x = x < -87.0f ? V16{} - 87.0f : x;
  x = x > 88.0f ? V16{} + 88.0f : x;
  const V16 fx = x * 1.44269504088896341f + 0.5f;
  V16 n = __builtin_convertvector(__builtin_convertvector(fx, I16), V16);
  n = n > fx ? n - 1.0f : n;  // truncation rounds up below zero: floor
  const V16 r = x - n * 0.693359375f + n * 2.12194440e-4f;
  V16 p = V16{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const I16 bits = (__builtin_convertvector(n, I16) + 127) << 23;
  x = p * (V16)bits;
}

// Per-channel sums and sums of squares of pixels [p0, p1), in fp32 over short runs of pixels and
// in double across them, so a 65,536-pixel plane loses nothing to fp32 accumulation.
template <typename T>
__attribute__((always_inline)) inline void channel_sums_impl(const T* x, int64_t p0, int64_t p1,
                                                             int64_t c, double* s, double* ss) {
  const auto n = static_cast<size_t>(c);
  std::vector<float> buf(3 * n);
  float *row = buf.data(), *fs = row + n, *fss = fs + n;
  for (int64_t p = p0; p < p1;) {
    const int64_t run = std::min<int64_t>(64, p1 - p);
    std::fill(fs, fs + 2 * n, 0.0f);
    for (int64_t q = p; q < p + run; ++q) {
      load_row(x + q * c, row, c);
      for (int64_t i = 0; i < c; ++i) {
        fs[i] += row[i];
        fss[i] += row[i] * row[i];
      }
    }
    for (int64_t i = 0; i < c; ++i) {
      s[i] += fs[i];
      ss[i] += fss[i];
    }
    p += run;
  }
}

// y = silu(x * a + b) per channel (or without the SiLU) for pixels [p0, p1). The row buffer is
// padded to whole vectors; a and b must be too (norm_image pads them with zeros).
template <typename T>
__attribute__((always_inline)) inline void apply_impl(const T* x, T* y, int64_t p0, int64_t p1,
                                                      int64_t c, const float* a, const float* b,
                                                      bool silu) {
  const int64_t padded = (c + kLanes - 1) / kLanes * kLanes;
  std::vector<float> row(static_cast<size_t>(padded), 0.0f);
  float* r = row.data();
  // fp32 rows of whole vectors are read and written in place; others go through the buffer.
  const bool direct = std::is_same_v<T, float> && padded == c;
  for (int64_t p = p0; p < p1; ++p) {
    if (direct) {
      r = reinterpret_cast<float*>(y + p * c);
      std::memcpy(r, x + p * c, sizeof(float) * size_t(c));
    } else {
      load_row(x + p * c, r, c);
    }
    for (int64_t i = 0; i < padded; i += kLanes) {
      V16 v, va, vb;
      std::memcpy(&v, r + i, sizeof(V16));
      std::memcpy(&va, a + i, sizeof(V16));
      std::memcpy(&vb, b + i, sizeof(V16));
      v = v * va + vb;
      if (silu) {
        V16 e = -v;
        exp_poly(e);
        v = v / (1.0f + e);
      }
      std::memcpy(r + i, &v, sizeof(V16));
    }
    if (!direct) store_row(r, y + p * c, c);
  }
}

// The same two loops compiled three times; the widest this CPU runs is called.
#define ADTREE_GN_VARIANT(NAME, TARGET)                                                         \
  template <typename T>                                                                         \
  TARGET void channel_sums_##NAME(const T* x, int64_t p0, int64_t p1, int64_t c, double* s,     \
                                  double* ss) {                                                 \
    channel_sums_impl(x, p0, p1, c, s, ss);                                                     \
  }                                                                                             \
  template <typename T>                                                                         \
  TARGET void apply_##NAME(const T* x, T* y, int64_t p0, int64_t p1, int64_t c, const float* a, \
                           const float* b, bool silu) {                                         \
    apply_impl(x, y, p0, p1, c, a, b, silu);                                                    \
  }
ADTREE_GN_VARIANT(avx512, __attribute__((target("avx512f,avx512bw,avx512vl,fma"))))
ADTREE_GN_VARIANT(avx2, __attribute__((target("avx2,fma"))))
ADTREE_GN_VARIANT(portable, )
#undef ADTREE_GN_VARIANT

enum class Isa { Portable = 0, Avx2 = 1, Avx512 = 2 };
std::atomic<int> g_forced{-1};

Isa widest_isa() {
  static const Isa i = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                               __builtin_cpu_supports("avx512vl")
                           ? Isa::Avx512
                       : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")
                           ? Isa::Avx2
                           : Isa::Portable;
  return i;
}

Isa isa() {
  const int forced = g_forced.load(std::memory_order_relaxed);
  return forced < 0 ? widest_isa() : Isa(std::min(forced, int(widest_isa())));
}

template <typename T>
void channel_sums(const T* x, int64_t p0, int64_t p1, int64_t c, double* s, double* ss) {
  switch (isa()) {
    case Isa::Avx512:
      return channel_sums_avx512(x, p0, p1, c, s, ss);
    case Isa::Avx2:
      return channel_sums_avx2(x, p0, p1, c, s, ss);
    default:
      return channel_sums_portable(x, p0, p1, c, s, ss);
  }
}

template <typename T>
void apply(const T* x, T* y, int64_t p0, int64_t p1, int64_t c, const float* a, const float* b,
           bool silu) {
  switch (isa()) {
    case Isa::Avx512:
      return apply_avx512(x, y, p0, p1, c, a, b, silu);
    case Isa::Avx2:
      return apply_avx2(x, y, p0, p1, c, a, b, silu);
    default:
      return apply_portable(x, y, p0, p1, c, a, b, silu);
  }
}

// One image: the group statistics folded into per-channel scale and shift, then the pass.
template <typename T>
void norm_image(const T* x, T* y, int64_t pixels, int64_t c, int64_t groups, const float* w,
                const float* bias, double eps, bool silu) {
  std::vector<double> s(static_cast<size_t>(c), 0.0), ss(static_cast<size_t>(c), 0.0);
  std::mutex mu;
  at::parallel_for(0, pixels, kPixelsPerTask, [&](int64_t p0, int64_t p1) {
    std::vector<double> ls(static_cast<size_t>(c), 0.0), lss(static_cast<size_t>(c), 0.0);
    channel_sums(x, p0, p1, c, ls.data(), lss.data());
    std::lock_guard<std::mutex> lock(mu);
    for (int64_t i = 0; i < c; ++i) s[size_t(i)] += ls[size_t(i)], ss[size_t(i)] += lss[size_t(i)];
  });
  const int64_t per = c / groups;
  const double n = double(pixels * per);
  const auto padded = static_cast<size_t>((c + kLanes - 1) / kLanes * kLanes);
  std::vector<float> a(padded, 0.0f), b(padded, 0.0f);
  for (int64_t g = 0; g < groups; ++g) {
    double sum = 0, sq = 0;
    for (int64_t i = g * per; i < (g + 1) * per; ++i) sum += s[size_t(i)], sq += ss[size_t(i)];
    const double mean = sum / n, var = std::max(0.0, sq / n - mean * mean);
    const double rstd = 1.0 / std::sqrt(var + eps);
    for (int64_t i = g * per; i < (g + 1) * per; ++i) {
      a[size_t(i)] = float(rstd * w[i]);
      b[size_t(i)] = float(bias[i] - mean * rstd * w[i]);
    }
  }
  at::parallel_for(0, pixels, kPixelsPerTask, [&](int64_t p0, int64_t p1) {
    apply(x, y, p0, p1, c, a.data(), b.data(), silu);
  });
}

}  // namespace

void force_group_norm_kernel(int kernel) {
  g_forced.store(kernel < 0 ? -1 : std::min(kernel, 2), std::memory_order_relaxed);
}

at::Tensor group_norm_nhwc(const at::Tensor& x, int64_t groups, const at::Tensor& weight,
                           const at::Tensor& bias, double eps, bool silu) {
  if (!x.defined() || x.dim() != 4 || !x.device().is_cpu() ||
      !x.is_contiguous(at::MemoryFormat::ChannelsLast) ||
      (x.scalar_type() != at::kFloat && x.scalar_type() != at::kBFloat16)) {
    throw Error("group_norm_nhwc: expected a channels-last float or bf16 CPU tensor [N, C, H, W]");
  }
  const int64_t n = x.size(0), c = x.size(1), pixels = x.size(2) * x.size(3);
  if (groups <= 0 || c % groups != 0 || weight.numel() != c || bias.numel() != c) {
    throw Error("group_norm_nhwc: " + std::to_string(c) + " channels, " + std::to_string(groups) +
                " groups and affine sizes " + std::to_string(weight.numel()) + " / " +
                std::to_string(bias.numel()) + " do not fit");
  }
  const at::Tensor w = weight.to(at::kFloat).contiguous(), b = bias.to(at::kFloat).contiguous();
  at::Tensor y = at::empty_like(x, at::MemoryFormat::ChannelsLast);
  for (int64_t i = 0; i < n; ++i) {
    if (x.scalar_type() == at::kFloat) {
      norm_image(x.data_ptr<float>() + i * pixels * c, y.data_ptr<float>() + i * pixels * c, pixels,
                 c, groups, w.data_ptr<float>(), b.data_ptr<float>(), eps, silu);
    } else {
      norm_image(x.data_ptr<at::BFloat16>() + i * pixels * c,
                 y.data_ptr<at::BFloat16>() + i * pixels * c, pixels, c, groups,
                 w.data_ptr<float>(), b.data_ptr<float>(), eps, silu);
    }
  }
  return y;
}

}  // namespace adtree::model
