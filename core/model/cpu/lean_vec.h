// Vector pieces the lean loops share (lean_kernels.cpp, lean_attention.cpp): an 8-lane dot
// product in a fixed order, exp for eight lanes, and whether the vector loops run at all.
#pragma once
#include <immintrin.h>

#include <cstdint>

#include "model/cpu/cpu_kernel.h"

namespace adtree::model::lean {

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

// The same choice as the matrix kernel's (packed_gemm.h): the CPU's, or what $ADTREE_KERNEL or
// a test forces, so that a forced portable run exercises every portable loop.
inline bool have_avx2() {
  return packed_kernel() != CpuKernel::Portable;
}

}  // namespace adtree::model::lean
