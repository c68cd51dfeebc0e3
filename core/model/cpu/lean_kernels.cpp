#include "model/cpu/lean_kernels.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "model/cpu/packed_gemm.h"

namespace adtree::model {

// Adjacent pairs (2j, 2j+1) of each head times cis[j] = cos + i sin (the reference's complex
// multiply), in place.
void lean_rotate(float* v, const float* cis, int64_t n_head, int64_t hd) {
  for (int64_t h = 0; h < n_head; ++h) {
    float* p = v + h * hd;
    for (int64_t j = 0; j < hd / 2; ++j) {
      const float a = p[2 * j], b = p[2 * j + 1], c = cis[2 * j], s = cis[2 * j + 1];
      p[2 * j] = a * c - b * s;
      p[2 * j + 1] = a * s + b * c;
    }
  }
}

namespace {
// 8-wide vectors (GCC/Clang extensions): compiled for AVX2+FMA inside the functions that carry
// that target, as two SSE2 halves in the portable ones.
typedef float v8 __attribute__((vector_size(32)));

__attribute__((always_inline)) inline float dot(const float* a, const float* b, int64_t n) {
  v8 acc = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    v8 x, y;
    __builtin_memcpy(&x, a + i, sizeof(v8));
    __builtin_memcpy(&y, b + i, sizeof(v8));
    acc += x * y;
  }
  float s = 0;
  for (int j = 0; j < 8; ++j) s += acc[j];
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

// out += p * v over n floats.
__attribute__((always_inline)) inline void axpy(float p, const float* v, float* out, int64_t n) {
  int64_t i = 0;
  const v8 pv = {p, p, p, p, p, p, p, p};
  for (; i + 8 <= n; i += 8) {
    v8 x, y;
    __builtin_memcpy(&x, v + i, sizeof(v8));
    __builtin_memcpy(&y, out + i, sizeof(v8));
    y += pv * x;
    __builtin_memcpy(out + i, &y, sizeof(v8));
  }
  for (; i < n; ++i) out[i] += p * v[i];
}

// One query row of one head against keys 0 .. n-1 of that head's cache rows: softmax(q k^T +
// bias) v into out. `scores` holds n floats.
__attribute__((always_inline)) inline void attend_row(const float* q, const float* K,
                                                      const float* V, int64_t n, int64_t hd,
                                                      const float* bias, int64_t bias_stride,
                                                      float* scores, float* out) {
  float mx = -INFINITY;
  for (int64_t j = 0; j < n; ++j) {
    scores[j] = dot(q, K + j * hd, hd) + bias[j * bias_stride];
    mx = std::max(mx, scores[j]);
  }
  float sum = 0;
  for (int64_t j = 0; j < n; ++j) {
    scores[j] = std::exp(scores[j] - mx);  // exp(-inf) = 0: hidden keys drop out
    sum += scores[j];
  }
  const float inv = 1.0f / sum;
  std::memset(out, 0, sizeof(float) * size_t(hd));
  for (int64_t j = 0; j < n; ++j) {
    if (scores[j] != 0) axpy(scores[j] * inv, V + j * hd, out, hd);
  }
}

// Every query of one (batch row, head): q rows `q_stride` floats apart, out rows `out_stride`.

__attribute__((always_inline)) inline void attend_block(const HeadBlock& a) {
  for (int64_t i = 0; i < a.n_query; ++i) {
    attend_row(a.q + i * a.q_stride, a.K, a.V, a.n_keys, a.hd, a.bias + i * a.bias_row_stride,
               a.bias_key_stride, a.scores, a.out + i * a.out_stride);
  }
}
// exp(x) for 8 lanes: x = n ln2 + r with |r| <= ln2 / 2, exp(r) by a degree-5 polynomial (Cephes'
// expf coefficients, about 2 ulp), times 2^n through the exponent bits. Below -87 (where expf
// underflows; -inf for hidden keys) the result is exactly 0, as expf's.
__attribute__((target("avx2,fma"))) inline __m256 exp8(__m256 x) {
  const __m256 hidden = _mm256_cmp_ps(x, _mm256_set1_ps(-87.0f), _CMP_LT_OQ);
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.3f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i bits =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_andnot_ps(hidden, _mm256_mul_ps(p, _mm256_castsi256_ps(bits)));
}

// s[j] = exp(s[j] - shift) for every j; returns their sum. Every element through exp8 (the tail
// padded with hidden keys) and the sum in key order, so that neither depends on the key count or
// on where a key sits in the row (hidden keys add exact zeros).
__attribute__((target("avx2,fma"))) float exp_shifted_sum_avx2(float* s, int64_t n, float shift) {
  const __m256 sh = _mm256_set1_ps(shift);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    _mm256_storeu_ps(s + j, exp8(_mm256_sub_ps(_mm256_loadu_ps(s + j), sh)));
  }
  if (j < n) {
    float tail[8];
    for (int64_t k = 0; k < 8; ++k) tail[k] = j + k < n ? s[j + k] : -INFINITY;
    _mm256_storeu_ps(tail, exp8(_mm256_sub_ps(_mm256_loadu_ps(tail), sh)));
    std::memcpy(s + j, tail, sizeof(float) * size_t(n - j));
  }
  float sum = 0;
  for (j = 0; j < n; ++j) sum += s[j];
  return sum;
}

__attribute__((target("avx2,fma"))) void swiglu_avx2(const float* g, int64_t rows, int64_t hid,
                                                     float* act) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* g1 = g + r * 2 * hid;
    const float* g3 = g1 + hid;
    float* a = act + r * hid;
    int64_t i = 0;
    for (; i + 8 <= hid; i += 8) {
      const __m256 x = _mm256_loadu_ps(g1 + i);
      const __m256 sig = _mm256_div_ps(
          _mm256_set1_ps(1.0f),
          _mm256_add_ps(_mm256_set1_ps(1.0f), exp8(_mm256_sub_ps(_mm256_setzero_ps(), x))));
      _mm256_storeu_ps(a + i, _mm256_mul_ps(_mm256_mul_ps(x, sig), _mm256_loadu_ps(g3 + i)));
    }
    for (; i < hid; ++i) a[i] = g1[i] / (1.0f + std::exp(-g1[i])) * g3[i];
  }
}

void swiglu_portable(const float* g, int64_t rows, int64_t hid, float* act) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* g1 = g + r * 2 * hid;
    const float* g3 = g1 + hid;
    float* a = act + r * hid;
    for (int64_t i = 0; i < hid; ++i) a[i] = g1[i] / (1.0f + std::exp(-g1[i])) * g3[i];
  }
}

// The same choice as the matrix kernel's (packed_gemm.h): the CPU's, or what $ADTREE_KERNEL or
// a test forces, so that a forced portable run exercises every portable loop.
bool have_avx2() {
  return packed_kernel() != CpuKernel::Portable;
}

// AVX2: eight keys' scores per pass (one q load feeds eight FMAs; the eight sums come out of one
// transposing reduction instead of eight horizontal adds), and the weighted sum of V kept in
// registers 64 floats at a time. Heads of other widths take the portable loops.
__attribute__((target("avx2,fma"))) inline __m256 sum8(__m256 a0, __m256 a1, __m256 a2, __m256 a3,
                                                       __m256 a4, __m256 a5, __m256 a6, __m256 a7) {
  const __m256 h0 = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
  const __m256 h1 = _mm256_hadd_ps(_mm256_hadd_ps(a4, a5), _mm256_hadd_ps(a6, a7));
  // h0 lanes: (0 1 2 3 | 0 1 2 3) halves of keys 0-3; h1 likewise for keys 4-7.
  return _mm256_add_ps(_mm256_permute2f128_ps(h0, h1, 0x20), _mm256_permute2f128_ps(h0, h1, 0x31));
}

// Scores of eight keys (rows of K, hd apart): each key's sum in the same order whichever of
// the eight it is.
__attribute__((target("avx2,fma"))) inline void score8(const float* q, const float* K, int64_t hd,
                                                       float* s) {
  __m256 a[8];
  for (int k = 0; k < 8; ++k) a[k] = _mm256_setzero_ps();
  for (int64_t d = 0; d < hd; d += 8) {
    const __m256 qv = _mm256_loadu_ps(q + d);
    for (int k = 0; k < 8; ++k) a[k] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(K + k * hd + d), a[k]);
  }
  _mm256_storeu_ps(s, sum8(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]));
}

// The last n % 8 keys go through score8 too, from zero-padded rows: a key's score is then the
// same whatever the key count (a decoding step and a tree block see the same key at different
// counts, and speculative decoding must commit AR's tokens).
__attribute__((target("avx2,fma"))) void scores_avx2(const float* q, const float* K, int64_t n,
                                                     int64_t hd, float* s) {
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) score8(q, K + j * hd, hd, s + j);
  if (j == n) return;
  thread_local std::vector<float> tail;
  tail.assign(size_t(8 * hd), 0.0f);
  std::memcpy(tail.data(), K + j * hd, sizeof(float) * size_t((n - j) * hd));
  float last[8];
  score8(q, tail.data(), hd, last);
  std::memcpy(s + j, last, sizeof(float) * size_t(n - j));
}

__attribute__((target("avx2,fma"))) void weighted_v_avx2(const float* p, const float* V, int64_t n,
                                                         int64_t hd, float* out) {
  for (int64_t c = 0; c < hd; c += 64) {
    __m256 a[8];
    for (int k = 0; k < 8; ++k) a[k] = _mm256_setzero_ps();
    for (int64_t j = 0; j < n; ++j) {
      if (p[j] == 0) continue;  // hidden keys
      const __m256 pj = _mm256_set1_ps(p[j]);
      const float* v = V + j * hd + c;
      for (int k = 0; k < 8; ++k) a[k] = _mm256_fmadd_ps(pj, _mm256_loadu_ps(v + 8 * k), a[k]);
    }
    for (int k = 0; k < 8; ++k) _mm256_storeu_ps(out + c + 8 * k, a[k]);
  }
}

float exp_shifted_sum(float* s, int64_t n, float shift) {
  if (have_avx2()) return exp_shifted_sum_avx2(s, n, shift);
  float sum = 0;
  for (int64_t j = 0; j < n; ++j) sum += (s[j] = std::exp(s[j] - shift));
  return sum;
}

// Scores s [n] of one query become its attention weights: + bias (bias[j * stride]), softmax.
void softmax_row(float* s, int64_t n, const float* bias, int64_t stride) {
  float mx = -INFINITY;
  for (int64_t j = 0; j < n; ++j) {
    s[j] += bias[j * stride];
    mx = std::max(mx, s[j]);
  }
  const float inv = 1.0f / exp_shifted_sum(s, n, mx);
  for (int64_t j = 0; j < n; ++j) s[j] *= inv;
}

__attribute__((target("avx2,fma"))) void attend_block_avx2(const HeadBlock& a) {
  if (a.hd % 64 != 0) {
    attend_block(a);
    return;
  }
  for (int64_t i = 0; i < a.n_query; ++i) {
    float* s = a.scores;
    scores_avx2(a.q + i * a.q_stride, a.K, a.n_keys, a.hd, s);
    softmax_row(s, a.n_keys, a.bias + i * a.bias_row_stride, a.bias_key_stride);
    weighted_v_avx2(s, a.V, a.n_keys, a.hd, a.out + i * a.out_stride);
  }
}

void attend_block_portable(const HeadBlock& a) {
  attend_block(a);
}

}  // namespace

void lean_attend(const HeadBlock& a) {
  have_avx2() ? attend_block_avx2(a) : attend_block_portable(a);
}

void lean_rms_norm(const float* x, const float* weight, int64_t rows, int64_t dim, double eps,
                   float* y) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    float* yr = y + r * dim;
    const float scale = 1.0f / std::sqrt(dot(xr, xr, dim) / float(dim) + float(eps));
    for (int64_t i = 0; i < dim; ++i) yr[i] = xr[i] * scale * weight[i];
  }
}

void lean_swiglu(const float* g, int64_t rows, int64_t hid, float* act) {
  have_avx2() ? swiglu_avx2(g, rows, hid, act) : swiglu_portable(g, rows, hid, act);
}

}  // namespace adtree::model
