#include "model/cpu/lean_attention.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "model/cpu/lean_vec.h"

namespace adtree::model {

namespace {
using lean::dot;
using lean::exp8;

// out += p * v over n floats.
__attribute__((always_inline)) inline void axpy(float p, const float* v, float* out, int64_t n) {
  int64_t i = 0;
  const lean::v8 pv = {p, p, p, p, p, p, p, p};
  for (; i + 8 <= n; i += 8) {
    lean::v8 x, y;
    __builtin_memcpy(&x, v + i, sizeof(lean::v8));
    __builtin_memcpy(&y, out + i, sizeof(lean::v8));
    y += pv * x;
    __builtin_memcpy(out + i, &y, sizeof(lean::v8));
  }
  for (; i < n; ++i) out[i] += p * v[i];
}

// The portable loops: one query row of one head against keys 0 .. n-1 of that head's cache rows.
void attend_block_portable(const HeadBlock& a) {
  for (int64_t i = 0; i < a.n_query; ++i) {
    const float* q = a.q + i * a.q_stride;
    const float* bias = a.bias + i * a.bias_row_stride;
    float* s = a.scores;
    float* out = a.out + i * a.out_stride;
    float mx = -INFINITY;
    for (int64_t j = 0; j < a.n_keys; ++j) {
      s[j] = dot(q, a.K + j * a.hd, a.hd) + bias[j * a.bias_key_stride];
      mx = std::max(mx, s[j]);
    }
    float sum = 0;
    for (int64_t j = 0; j < a.n_keys; ++j) {
      s[j] = std::exp(s[j] - mx);  // exp(-inf) = 0: hidden keys drop out
      sum += s[j];
    }
    const float inv = 1.0f / sum;
    std::memset(out, 0, sizeof(float) * size_t(a.hd));
    for (int64_t j = 0; j < a.n_keys; ++j) {
      if (s[j] != 0) axpy(s[j] * inv, a.V + j * a.hd, out, a.hd);
    }
  }
}

// s[j] = exp(s[j] - shift) for every j; returns their sum. Every element through exp8 (the tail
// padded with hidden keys) and the sum in key order, so that neither depends on the key count or
// on where a key sits in the row (hidden keys add exact zeros).
__attribute__((target("avx2,fma"))) float exp_shifted_sum(float* s, int64_t n, float shift) {
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

// Scores s [n] of one query become its attention weights: + bias (bias[j * stride]), softmax.
__attribute__((target("avx2,fma"))) void softmax_row(float* s, int64_t n, const float* bias,
                                                     int64_t stride) {
  float mx = -INFINITY;
  for (int64_t j = 0; j < n; ++j) {
    s[j] += bias[j * stride];
    mx = std::max(mx, s[j]);
  }
  const float inv = 1.0f / exp_shifted_sum(s, n, mx);
  for (int64_t j = 0; j < n; ++j) s[j] *= inv;
}

// The eight sums of a0 .. a7 (one per key) from one transposing reduction instead of eight
// horizontal adds.
__attribute__((target("avx2,fma"), always_inline)) inline __m256 sum8(const __m256* a) {
  const __m256 h0 = _mm256_hadd_ps(_mm256_hadd_ps(a[0], a[1]), _mm256_hadd_ps(a[2], a[3]));
  const __m256 h1 = _mm256_hadd_ps(_mm256_hadd_ps(a[4], a[5]), _mm256_hadd_ps(a[6], a[7]));
  // h0 lanes: (0 1 2 3 | 0 1 2 3) halves of keys 0-3; h1 likewise for keys 4-7.
  return _mm256_add_ps(_mm256_permute2f128_ps(h0, h1, 0x20), _mm256_permute2f128_ps(h0, h1, 0x31));
}

// Scores of G queries against eight keys (rows of K, hd apart): per query and key one
// accumulator of eight lanes over d, in the same order whatever G and whichever of the eight the
// key is. Each key row is loaded once for the G queries.
template <int G>
__attribute__((target("avx2,fma"), always_inline)) inline void score8(const float* const* q,
                                                                      const float* K, int64_t hd,
                                                                      float* const* s) {
  __m256 a[G][8];
  for (int g = 0; g < G; ++g) {
    for (int k = 0; k < 8; ++k) a[g][k] = _mm256_setzero_ps();
  }
  for (int64_t d = 0; d < hd; d += 8) {
    __m256 qv[G];
    for (int g = 0; g < G; ++g) qv[g] = _mm256_loadu_ps(q[g] + d);
    for (int k = 0; k < 8; ++k) {
      const __m256 kv = _mm256_loadu_ps(K + k * hd + d);
      for (int g = 0; g < G; ++g) a[g][k] = _mm256_fmadd_ps(qv[g], kv, a[g][k]);
    }
  }
  for (int g = 0; g < G; ++g) _mm256_storeu_ps(s[g], sum8(a[g]));
}

// The last n % 8 keys go through score8 too, from zero-padded rows: a key's score is then the
// same whatever the key count (a decoding step and a tree block see the same key at different
// counts, and speculative decoding must commit AR's tokens).
template <int G>
__attribute__((target("avx2,fma"), always_inline)) inline void scores(const float* const* q,
                                                                      const float* K, int64_t n,
                                                                      int64_t hd, float* const* s) {
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    float* sj[G];
    for (int g = 0; g < G; ++g) sj[g] = s[g] + j;
    score8<G>(q, K + j * hd, hd, sj);
  }
  if (j == n) return;
  thread_local std::vector<float> tail;
  tail.assign(size_t(8 * hd), 0.0f);
  std::memcpy(tail.data(), K + j * hd, sizeof(float) * size_t((n - j) * hd));
  float last[G][8];
  float* lp[G];
  for (int g = 0; g < G; ++g) lp[g] = last[g];
  score8<G>(q, tail.data(), hd, lp);
  for (int g = 0; g < G; ++g) std::memcpy(s[g] + j, last[g], sizeof(float) * size_t(n - j));
}

// out[g] = sum_j p[g][j] V[j], 64 floats of each at a time in registers, each value row loaded
// once for the G queries that see it. A key a query does not see (p = 0: hidden by the tree mask
// or the condition padding) leaves that query's sums untouched, as when it runs alone.
template <int G>
__attribute__((target("avx2,fma"), always_inline)) inline void weighted_v(const float* const* p,
                                                                          const float* V, int64_t n,
                                                                          int64_t hd,
                                                                          float* const* out) {
  for (int64_t c = 0; c < hd; c += 64) {
    __m256 a[G][8];
    for (int g = 0; g < G; ++g) {
      for (int k = 0; k < 8; ++k) a[g][k] = _mm256_setzero_ps();
    }
    for (int64_t j = 0; j < n; ++j) {
      const float* v = V + j * hd + c;
      bool all = true;
      for (int g = 0; g < G; ++g) all = all && p[g][j] != 0;
      if (all) {  // the prefix: every query sees it
        __m256 pj[G];
        for (int g = 0; g < G; ++g) pj[g] = _mm256_set1_ps(p[g][j]);
        for (int k = 0; k < 8; ++k) {
          const __m256 vk = _mm256_loadu_ps(v + 8 * k);
          for (int g = 0; g < G; ++g) a[g][k] = _mm256_fmadd_ps(pj[g], vk, a[g][k]);
        }
        continue;
      }
      for (int g = 0; g < G; ++g) {
        if (p[g][j] == 0) continue;
        const __m256 pj = _mm256_set1_ps(p[g][j]);
        for (int k = 0; k < 8; ++k)
          a[g][k] = _mm256_fmadd_ps(pj, _mm256_loadu_ps(v + 8 * k), a[g][k]);
      }
    }
    for (int g = 0; g < G; ++g) {
      for (int k = 0; k < 8; ++k) _mm256_storeu_ps(out[g] + c + 8 * k, a[g][k]);
    }
  }
}

// weighted_v on 16 lanes: each output float is the same chain of fused multiply-adds over the keys
// as on 8 (lanes never mix here), so the sums are weighted_v's bit for bit, in half the
// instructions; four registers of 16 hold a query's 64 floats.
template <int G>
__attribute__((target("avx512f,avx2,fma"), always_inline)) inline void weighted_v16(
    const float* const* p, const float* V, int64_t n, int64_t hd, float* const* out) {
  for (int64_t c = 0; c < hd; c += 64) {
    __m512 a[G][4];
    for (int g = 0; g < G; ++g) {
      for (int k = 0; k < 4; ++k) a[g][k] = _mm512_setzero_ps();
    }
    for (int64_t j = 0; j < n; ++j) {
      const float* v = V + j * hd + c;
      bool all = true;
      for (int g = 0; g < G; ++g) all = all && p[g][j] != 0;
      if (all) {
        __m512 pj[G];
        for (int g = 0; g < G; ++g) pj[g] = _mm512_set1_ps(p[g][j]);
        for (int k = 0; k < 4; ++k) {
          const __m512 vk = _mm512_loadu_ps(v + 16 * k);
          for (int g = 0; g < G; ++g) a[g][k] = _mm512_fmadd_ps(pj[g], vk, a[g][k]);
        }
        continue;
      }
      for (int g = 0; g < G; ++g) {
        if (p[g][j] == 0) continue;
        const __m512 pj = _mm512_set1_ps(p[g][j]);
        for (int k = 0; k < 4; ++k) {
          a[g][k] = _mm512_fmadd_ps(pj, _mm512_loadu_ps(v + 16 * k), a[g][k]);
        }
      }
    }
    for (int g = 0; g < G; ++g) {
      for (int k = 0; k < 4; ++k) _mm512_storeu_ps(out[g] + c + 16 * k, a[g][k]);
    }
  }
}

// Queries [i0, i0 + G) of the block; `s` holds G rows of n_keys scores: their scores and softmax,
// then the weighted sums on 8 lanes (attend_group8) or, from an AVX-512 caller, on 16
// (attend_group16), the same bits.
template <int G>
__attribute__((target("avx2,fma"), always_inline)) inline void group_scores(const HeadBlock& a,
                                                                            int64_t i0, float* s,
                                                                            const float** sg_out,
                                                                            float** out) {
  const float* q[G];
  float* sg[G];
  for (int g = 0; g < G; ++g) {
    q[g] = a.q + (i0 + g) * a.q_stride;
    sg[g] = s + g * a.n_keys;
    sg_out[g] = sg[g];
    out[g] = a.out + (i0 + g) * a.out_stride;
  }
  scores<G>(q, a.K, a.n_keys, a.hd, sg);
  for (int g = 0; g < G; ++g) {
    softmax_row(sg[g], a.n_keys, a.bias + (i0 + g) * a.bias_row_stride, a.bias_key_stride);
  }
}

template <int G>
__attribute__((target("avx2,fma"), always_inline)) inline void attend_group8(const HeadBlock& a,
                                                                             int64_t i0, float* s) {
  const float* sg[G];
  float* out[G];
  group_scores<G>(a, i0, s, sg, out);
  weighted_v<G>(sg, a.V, a.n_keys, a.hd, out);
}

template <int G>
__attribute__((target("avx512f,avx512vl,avx2,fma"), always_inline)) inline void attend_group16(
    const HeadBlock& a, int64_t i0, float* s) {
  const float* sg[G];
  float* out[G];
  group_scores<G>(a, i0, s, sg, out);
  weighted_v16<G>(sg, a.V, a.n_keys, a.hd, out);
}

__attribute__((target("avx2,fma"))) void attend_block_avx2(const HeadBlock& a) {
  for (int64_t i = 0; i < a.n_query; ++i) attend_group8<1>(a, i, a.scores);
}

// Three queries at a time: 24 accumulators, three query vectors and a key vector fill AVX-512VL's
// 32 registers for the scores (the instructions on each lane are AVX2's), twelve of 16 lanes the
// weighted sums.
__attribute__((target("avx512f,avx512vl,avx2,fma"))) void attend_block_avx512(const HeadBlock& a) {
  thread_local std::vector<float> s;
  if (int64_t(s.size()) < 3 * a.n_keys) s.resize(size_t(3 * a.n_keys));
  int64_t i = 0;
  for (; i + 3 <= a.n_query; i += 3) attend_group16<3>(a, i, s.data());
  for (; i < a.n_query; ++i) attend_group16<1>(a, i, s.data());
}
}  // namespace

void lean_attend(const HeadBlock& a) {
  // Heads of other widths than multiples of 64 take the portable loops.
  if (!lean::have_avx2() || a.hd % 64 != 0) return attend_block_portable(a);
  if (packed_kernel() >= CpuKernel::Avx512) return attend_block_avx512(a);
  attend_block_avx2(a);
}

}  // namespace adtree::model
