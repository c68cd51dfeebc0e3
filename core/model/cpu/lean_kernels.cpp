#include "model/cpu/lean_kernels.h"

#include <immintrin.h>

#include <cmath>

#include "model/cpu/lean_vec.h"

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
          _mm256_add_ps(_mm256_set1_ps(1.0f), lean::exp8(_mm256_sub_ps(_mm256_setzero_ps(), x))));
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
}  // namespace

void lean_rms_norm(const float* x, const float* weight, int64_t rows, int64_t dim, double eps,
                   float* y) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    float* yr = y + r * dim;
    const float scale = 1.0f / std::sqrt(lean::dot(xr, xr, dim) / float(dim) + float(eps));
    for (int64_t i = 0; i < dim; ++i) yr[i] = xr[i] * scale * weight[i];
  }
}

void lean_swiglu(const float* g, int64_t rows, int64_t hid, float* act) {
  lean::have_avx2() ? swiglu_avx2(g, rows, hid, act) : swiglu_portable(g, rows, hid, act);
}

}  // namespace adtree::model
