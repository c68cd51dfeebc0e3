#include "model/llamagen/lean_layer.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "model/cpu/forward_profile.h"
#include "model/cpu/lean_attention.h"
#include "model/cpu/lean_kernels.h"
#include "util/error.h"
#include "util/worker_pool.h"

namespace adtree::model {

namespace {
std::atomic<int> g_lean{-1};  // -1: not read from the environment yet

// Per-thread work rows: grown to the largest step seen, never shrunk, so a decoding loop stops
// allocating after its first steps. Per thread because one model may serve several engines.
struct Work {
  std::vector<float> xn, qkv, att, norm, g, act, scores, cis, bias;
  static float* grow(std::vector<float>& v, int64_t n) {
    if (int64_t(v.size()) < n) v.resize(size_t(n));
    return v.data();
  }
};
thread_local Work t_work;

// Query-key pairs of a block from which its attention is shared out over the worker pool.
constexpr int64_t kShareAttentionFrom = 64;
// Rows of a block from which the row-wise loops (norms, RoPE and the cache write, SwiGLU) are
// shared out too: each row is its own work, so the split changes no value; below, handing over
// costs more than the loop (a one-token step's two rows).
constexpr int64_t kShareRowsFrom = 8;

// body(begin, end) over rows [0, rows): on the pool in a few chunks per thread, or here.
template <typename F>
void by_rows(int64_t rows, F body) {
  auto& pool = WorkerPool::shared();
  if (rows < kShareRowsFrom || pool.threads() == 1) return body(int64_t(0), rows);
  pool.run(rows, std::max<int64_t>(1, rows / (2 * pool.threads())),
           [&](int64_t b, int64_t e) { body(b, e); });
}

// y [rows, n_out] = x @ w^T: the packed kernel (on the worker pool, at least as fast as
// single-threaded BLAS from 1 row to a few hundred, docs/PERFORMANCE.md; fp32 or bf16 panels),
// BLAS for an fp32 matrix that was not packed.
void linear_rows(const float* x, int64_t rows, int64_t in, const at::Tensor& w,
                 const PackedWeight& packed, float* y) {
  if (packed.defined()) {
    packed_gemm(x, rows, packed, nullptr, y);
    return;
  }
  auto opts = at::TensorOptions().dtype(at::kFloat);
  auto xt = at::from_blob(const_cast<float*>(x), {rows, in}, opts);
  auto yt = at::from_blob(y, {rows, w.size(0)}, opts);
  at::mm_out(yt, xt, w.t());
}

void add_rows(float* h, const float* d, int64_t n) {
  PartTimer t(ForwardPart::Residual);
  for (int64_t i = 0; i < n; ++i) h[i] += d[i];
}

// h += wo att; then the SwiGLU feed-forward on the normalised sum, added in place.
void feed_forward(const DecoderLayer& L, double norm_eps, const float* att, int64_t rows,
                  int64_t dim, int64_t hid, float* h) {
  Work& w = t_work;
  float* proj = Work::grow(w.xn, rows * dim);  // xn is no longer needed
  {
    PartTimer t(ForwardPart::Wo);
    linear_rows(att, rows, dim, L.wo, L.p_wo, proj);
  }
  add_rows(h, proj, rows * dim);
  float* hn = Work::grow(w.norm, rows * dim);
  {
    PartTimer t(ForwardPart::Norms);
    by_rows(rows, [&](int64_t b, int64_t e) {
      lean_rms_norm(h + b * dim, L.ffn_norm32.data_ptr<float>(), e - b, dim, norm_eps,
                    hn + b * dim);
    });
  }
  float* g = Work::grow(w.g, rows * 2 * hid);
  {
    PartTimer t(ForwardPart::W13);
    linear_rows(hn, rows, dim, L.w13, L.p_w13, g);
  }
  float* act = Work::grow(w.act, rows * hid);
  {
    PartTimer t(ForwardPart::Swiglu);
    by_rows(rows,
            [&](int64_t b, int64_t e) { lean_swiglu(g + b * 2 * hid, e - b, hid, act + b * hid); });
  }
  {
    PartTimer t(ForwardPart::W2);
    linear_rows(act, rows, hid, L.w2, L.p_w2, proj);
  }
  add_rows(h, proj, rows * dim);
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
  if (!lean_enabled() || !L.packed_q_prescaled || !L.ffn_norm32.defined()) return false;
  if (!L.p_wqkv.defined() || !L.p_wo.defined() || !L.p_w13.defined() || !L.p_w2.defined()) {
    return false;
  }
  if (!x.device().is_cpu() || x.scalar_type() != at::kFloat || !x.is_contiguous()) return false;
  if (cache) {
    const auto& k = cache->k.front();
    if (k.scalar_type() != at::kFloat || !k.is_contiguous() || !k.device().is_cpu()) return false;
  }
  return true;
}

LeanPlan lean_plan(const Rope2d& rope, KvCache* cache, int64_t B, const at::Tensor& pos,
                   const at::Tensor& block_mask, const at::Tensor& block_key_valid,
                   PositionBounds bounds) {
  const int64_t q = pos.numel(), hd = rope.cis().size(1) * 2;
  Work& w = t_work;
  LeanPlan plan;
  plan.start = checked_block_start(rope, cache, B, pos, block_mask, bounds);
  plan.n_keys = plan.start + q;
  const int64_t prefix = cache ? cache->len : 0, scratch = plan.start - prefix;
  // RoPE rows of the block's positions, gathered from the table.
  const auto p = pos.to(at::kLong).contiguous();
  const auto cis_table = rope.cis().contiguous();  // complex64 [seq, hd/2] = (cos, sin) pairs
  const float* table = reinterpret_cast<const float*>(cis_table.data_ptr());
  float* cis = Work::grow(w.cis, q * hd);
  for (int64_t i = 0; i < q; ++i) {
    std::memcpy(cis + i * hd, table + p.data_ptr<int64_t>()[i] * hd, sizeof(float) * size_t(hd));
  }
  plan.cis = cis;
  // Key validity of the block's own rows (condition padding) into the cache's key bias.
  const auto valid =
      block_key_valid.defined() ? block_key_valid.to(at::kBool).contiguous() : at::Tensor();
  const bool* vp = valid.defined() ? valid.data_ptr<bool>() : nullptr;
  float* kb = cache ? cache->key_bias.data_ptr<float>() : nullptr;
  const int64_t kb_stride = cache ? cache->key_bias.stride(0) : 0;
  auto key_ok = [&](int64_t b, int64_t i) { return !vp || vp[b * q + i]; };
  if (cache) {
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t i = 0; i < q; ++i) {
        kb[b * kb_stride + plan.start + i] = key_ok(b, i) ? 0.0f : -INFINITY;
      }
    }
  }
  // Bias rows: committed keys keep their own bias, scratch and block keys follow the mask
  // (default causal) and their validity, and a query always sees itself.
  const auto mask = block_mask.defined() ? block_mask.to(at::kBool).contiguous() : at::Tensor();
  const bool* mp = mask.defined() ? mask.data_ptr<bool>() : nullptr;
  float* bias = Work::grow(w.bias, B * q * plan.n_keys);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t i = 0; i < q; ++i) {
      float* row = bias + (b * q + i) * plan.n_keys;
      for (int64_t j = 0; j < prefix; ++j) row[j] = kb[b * kb_stride + j];
      for (int64_t jj = 0; jj < scratch + q; ++jj) {
        const bool visible = mp ? mp[i * (scratch + q) + jj] : jj <= i;
        const float key =
            cache ? kb[b * kb_stride + prefix + jj] : (key_ok(b, jj) ? 0.0f : -INFINITY);
        row[prefix + jj] = visible ? key : -INFINITY;
      }
      row[plan.start + i] = 0.0f;
    }
  }
  plan.bias = bias;
  return plan;
}

void lean_run_layer(const DecoderLayer& L, int64_t n_head, double norm_eps, at::Tensor& x,
                    const LeanPlan& plan, KvCache* cache, int64_t layer) {
  const int64_t B = x.size(0), q = x.size(1), dim = x.size(2), rows = B * q;
  const int64_t hd = dim / n_head, hid = L.w2.size(1);
  Work& w = t_work;
  float* h = x.data_ptr<float>();

  // Attention input: the draft head's layer has no input norm.
  const float* xin = h;
  if (L.attn_norm.defined()) {
    PartTimer t(ForwardPart::Norms);
    float* xn = Work::grow(w.xn, rows * dim);
    by_rows(rows, [&](int64_t b, int64_t e) {
      lean_rms_norm(h + b * dim, L.attn_norm32.data_ptr<float>(), e - b, dim, norm_eps,
                    xn + b * dim);
    });
    xin = xn;
  }
  float* qkv = Work::grow(w.qkv, rows * 3 * dim);
  {
    PartTimer t(ForwardPart::Qkv);
    linear_rows(xin, rows, dim, L.wqkv, L.p_wqkv, qkv);
  }

  // RoPE on q and k, then k and v into the cache rows (or, without a cache, into work rows laid
  // out the same way: [B, H, q, hd]).
  const float* cis = plan.cis;
  const int64_t n_keys = plan.n_keys;
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
  {
    PartTimer t(ForwardPart::RopeCache);
    by_rows(rows, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t b = r / q, i = r % q;
        float* row = qkv + r * 3 * dim;
        lean_rotate(row, cis + i * hd, 2 * n_head, hd);  // q heads then k heads, adjacent
        for (int64_t hh = 0; hh < n_head; ++hh) {
          const int64_t slot = ((b * n_head + hh) * cap + plan.start + i) * hd;
          std::memcpy(K + slot, row + dim + hh * hd, sizeof(float) * size_t(hd));
          std::memcpy(V + slot, row + 2 * dim + hh * hd, sizeof(float) * size_t(hd));
        }
      }
    });
  }

  // Attention over every visible key, per batch row, head and query.
  const float* bp = plan.bias;  // [B, q, n_keys]
  float* att = Work::grow(w.att, rows * dim);
  auto heads = [&](int64_t begin, int64_t end) {
    float* scores = Work::grow(t_work.scores, n_keys);  // the running thread's own row
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / n_head, hh = bh % n_head, base = bh * cap * hd;
      lean_attend({qkv + b * q * 3 * dim + hh * hd, K + base, V + base, bp + b * q * n_keys, q,
                   n_keys, hd, 3 * dim, dim, n_keys, 1, scores, att + b * q * dim + hh * hd});
    }
  };
  // One (batch row, head) per chunk whenever the keys are many: even a single query reads its
  // head's keys and values from the cache (about 75 KB a head at half an emoji picture), a
  // stream that two cores read faster than one (docs/PERFORMANCE.md, "Verification blocks").
  {
    PartTimer t(ForwardPart::Attention);
    if (q * n_keys >= kShareAttentionFrom) {
      WorkerPool::shared().run(B * n_head, 1, heads);
    } else {
      heads(0, B * n_head);
    }
  }
  feed_forward(L, norm_eps, att, rows, dim, hid, h);
}

}  // namespace adtree::model
