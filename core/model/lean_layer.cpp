#include "model/lean_layer.h"

#include <immintrin.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "util/error.h"

namespace adtree::model {

namespace {
std::atomic<int> g_lean{-1};  // -1: not read from the environment yet

// Per-thread work rows: grown to the largest step seen, never shrunk, so a decoding loop stops
// allocating after its first steps. Per thread because one model may serve several engines.
struct Work {
  std::vector<float> xn, qkv, att, g, act, scores;
  static float* grow(std::vector<float>& v, int64_t n) {
    if (int64_t(v.size()) < n) v.resize(size_t(n));
    return v.data();
  }
};
thread_local Work t_work;

// y [rows, n_out] = x @ w^T: the packed kernel for decoding blocks, BLAS beyond its reach (a
// prefill or a large verification block), both writing into the caller's rows.
void linear_rows(const float* x, int64_t rows, int64_t in, const at::Tensor& w,
                 const PackedWeight& packed, float* y) {
  if (packed.defined() && rows <= kPackedMaxRows) {
    packed_gemm(x, rows, packed, nullptr, y);
    return;
  }
  auto opts = at::TensorOptions().dtype(at::kFloat);
  auto xt = at::from_blob(const_cast<float*>(x), {rows, in}, opts);
  auto yt = at::from_blob(y, {rows, w.size(0)}, opts);
  at::mm_out(yt, xt, w.t());
}

// Adjacent pairs (2j, 2j+1) of each head times cis[j] = cos + i sin (the reference's complex
// multiply), in place.
void rotate(float* v, const float* cis, int64_t n_head, int64_t hd) {
  for (int64_t h = 0; h < n_head; ++h) {
    float* p = v + h * hd;
    for (int64_t j = 0; j < hd / 2; ++j) {
      const float a = p[2 * j], b = p[2 * j + 1], c = cis[2 * j], s = cis[2 * j + 1];
      p[2 * j] = a * c - b * s;
      p[2 * j + 1] = a * s + b * c;
    }
  }
}

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
struct HeadBlock {
  const float *q, *K, *V, *bias;
  int64_t n_query, n_keys, hd, q_stride, out_stride, bias_row_stride, bias_key_stride;
  float *scores, *out;
};

__attribute__((always_inline)) inline void attend_block(const HeadBlock& a) {
  for (int64_t i = 0; i < a.n_query; ++i) {
    attend_row(a.q + i * a.q_stride, a.K, a.V, a.n_keys, a.hd, a.bias + i * a.bias_row_stride,
               a.bias_key_stride, a.scores, a.out + i * a.out_stride);
  }
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

__attribute__((target("avx2,fma"))) void scores_avx2(const float* q, const float* K, int64_t n,
                                                     int64_t hd, float* s) {
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    __m256 a[8];
    for (int k = 0; k < 8; ++k) a[k] = _mm256_setzero_ps();
    for (int64_t d = 0; d < hd; d += 8) {
      const __m256 qv = _mm256_loadu_ps(q + d);
      for (int k = 0; k < 8; ++k) {
        a[k] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(K + (j + k) * hd + d), a[k]);
      }
    }
    _mm256_storeu_ps(s + j, sum8(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]));
  }
  for (; j < n; ++j) s[j] = dot(q, K + j * hd, hd);
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

__attribute__((target("avx2,fma"))) void attend_block_avx2(const HeadBlock& a) {
  if (a.hd % 64 != 0) {
    attend_block(a);
    return;
  }
  for (int64_t i = 0; i < a.n_query; ++i) {
    float* s = a.scores;
    scores_avx2(a.q + i * a.q_stride, a.K, a.n_keys, a.hd, s);
    const float* bias = a.bias + i * a.bias_row_stride;
    float mx = -INFINITY;
    for (int64_t j = 0; j < a.n_keys; ++j) {
      s[j] += bias[j * a.bias_key_stride];
      mx = std::max(mx, s[j]);
    }
    float sum = 0;
    for (int64_t j = 0; j < a.n_keys; ++j) sum += (s[j] = std::exp(s[j] - mx));
    const float inv = 1.0f / sum;
    for (int64_t j = 0; j < a.n_keys; ++j) s[j] *= inv;
    weighted_v_avx2(s, a.V, a.n_keys, a.hd, a.out + i * a.out_stride);
  }
}

void attend_block_portable(const HeadBlock& a) {
  attend_block(a);
}

void attend(const HeadBlock& a) {
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  avx2 ? attend_block_avx2(a) : attend_block_portable(a);
}
}  // namespace

bool lean_enabled() {
  int on = g_lean.load(std::memory_order_relaxed);
  if (on < 0) {
    const char* env = std::getenv("ADTREE_LEAN");
    on = env && std::string(env) == "0" ? 0 : 1;
    g_lean.store(on, std::memory_order_relaxed);
  }
  return on == 1;
}

void set_lean_enabled(bool on) {
  g_lean.store(on ? 1 : 0, std::memory_order_relaxed);
}

bool lean_applies(const DecoderLayer& L, const at::Tensor& x, const KvCache* cache) {
  if (!lean_enabled() || !L.q_prescaled || !L.p_w13.defined()) return false;
  if (!x.device().is_cpu() || x.scalar_type() != at::kFloat || !x.is_contiguous()) return false;
  if (L.wqkv.scalar_type() != at::kFloat || !L.wqkv.is_contiguous()) return false;
  if (cache) {
    const auto& k = cache->k.front();
    if (k.scalar_type() != at::kFloat || !k.is_contiguous() || !k.device().is_cpu()) return false;
  }
  return true;
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

void lean_run_layer(const DecoderLayer& L, int64_t n_head, double norm_eps, at::Tensor& x,
                    const BlockPlan& plan, KvCache* cache, int64_t layer) {
  const int64_t B = x.size(0), q = x.size(1), dim = x.size(2), rows = B * q;
  const int64_t hd = dim / n_head, hid = L.w2.size(1);
  Work& w = t_work;
  float* h = x.data_ptr<float>();

  // Attention input: the draft head's layer has no input norm.
  const float* xin = h;
  if (L.attn_norm.defined()) {
    float* xn = Work::grow(w.xn, rows * dim);
    lean_rms_norm(h, L.attn_norm.data_ptr<float>(), rows, dim, norm_eps, xn);
    xin = xn;
  }
  float* qkv = Work::grow(w.qkv, rows * 3 * dim);
  linear_rows(xin, rows, dim, L.wqkv, L.p_wqkv, qkv);

  // RoPE on q and k, then k and v into the cache rows (or, without a cache, into work rows laid
  // out the same way: [B, H, q, hd]).
  const auto cis_real = at::view_as_real(plan.cis);  // [q, hd/2, 2], contiguous
  const float* cis = cis_real.data_ptr<float>();
  const int64_t n_keys = plan.start + q;
  const int64_t cap = cache ? cache->capacity() : q;
  std::vector<float> local_kv;
  float *K, *V;
  if (cache) {
    K = cache->k[size_t(layer)].data_ptr<float>();
    V = cache->v[size_t(layer)].data_ptr<float>();
  } else {
    local_kv.resize(size_t(2 * B * n_head * q * hd));
    K = local_kv.data();
    V = K + B * n_head * q * hd;
  }
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t i = 0; i < q; ++i) {
      float* row = qkv + (b * q + i) * 3 * dim;
      rotate(row, cis + i * hd, 2 * n_head, hd);  // q heads then k heads, adjacent in the row
      for (int64_t hh = 0; hh < n_head; ++hh) {
        const int64_t slot = ((b * n_head + hh) * cap + plan.start + i) * hd;
        std::memcpy(K + slot, row + dim + hh * hd, sizeof(float) * size_t(hd));
        std::memcpy(V + slot, row + 2 * dim + hh * hd, sizeof(float) * size_t(hd));
      }
    }
  }

  // Attention over every visible key, per batch row, head and query.
  const auto& bias = plan.bias;  // [B, 1, q, n_keys], possibly a strided view of key_bias
  const float* bp = bias.data_ptr<float>();
  const int64_t bs0 = bias.stride(0), bs2 = bias.size(2) == 1 ? 0 : bias.stride(2),
                bs3 = bias.stride(3);
  float* att = Work::grow(w.att, rows * dim);
  float* scores = Work::grow(w.scores, n_keys);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t hh = 0; hh < n_head; ++hh) {
      const int64_t base = (b * n_head + hh) * cap * hd;
      attend({qkv + b * q * 3 * dim + hh * hd, K + base, V + base, bp + b * bs0, q, n_keys, hd,
              3 * dim, dim, bs2, bs3, scores, att + b * q * dim + hh * hd});
    }
  }

  // h += wo att; then the SwiGLU feed-forward on the normalised sum, added in place.
  float* proj = Work::grow(w.xn, rows * dim);  // xn is no longer needed
  linear_rows(att, rows, dim, L.wo, L.p_wo, proj);
  for (int64_t i = 0; i < rows * dim; ++i) h[i] += proj[i];
  float* hn = Work::grow(w.att, rows * dim);  // nor is att
  lean_rms_norm(h, L.ffn_norm.data_ptr<float>(), rows, dim, norm_eps, hn);
  float* g = Work::grow(w.g, rows * 2 * hid);
  linear_rows(hn, rows, dim, L.w13, L.p_w13, g);
  float* act = Work::grow(w.act, rows * hid);
  for (int64_t r = 0; r < rows; ++r) {
    const float* g1 = g + r * 2 * hid;
    const float* g3 = g1 + hid;
    float* a = act + r * hid;
    for (int64_t i = 0; i < hid; ++i) a[i] = g1[i] / (1.0f + std::exp(-g1[i])) * g3[i];
  }
  linear_rows(act, rows, hid, L.w2, L.p_w2, proj);
  for (int64_t i = 0; i < rows * dim; ++i) h[i] += proj[i];
}

}  // namespace adtree::model
