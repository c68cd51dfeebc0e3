// An independent, deliberately naive LlamaGen forward for parity tests: written from LLAMAGEN.md
// with explicit loops for the 2-D RoPE angles and per-head attention, sharing no code with
// core/model/llamagen/gpt.cpp beyond the weight names.
#pragma once
#include <ATen/ATen.h>

#include <cmath>
#include <limits>

#include "model/llamagen/gpt.h"

namespace adtree::testing {

inline model::GptConfig micro_config(model::CondKind cond = model::CondKind::Caption) {
  auto c = model::GptConfig::preset("micro");
  if (cond == model::CondKind::Class) {
    c.cond = cond;
    c.num_classes = 5;
  }
  return c;
}

// Rotates one head vector v [hd] sitting at sequence position `pos` by LLAMAGEN.md's rule.
inline at::Tensor ref_rope(const at::Tensor& v, int64_t pos, int64_t C, int64_t grid, double base) {
  const int64_t hd = v.size(0), quarter = hd / 4;
  auto out = v.clone();
  if (pos < C) return at::zeros_like(v);  // condition positions: cos = sin = 0
  const int64_t n = pos - C, r = n / grid, c = n % grid;
  for (int64_t j = 0; j < hd / 2; ++j) {
    const int64_t i = j % quarter;
    const double freq = std::pow(base, -2.0 * double(i) / double(hd / 2));
    const float freqf = float(freq);
    const float ang = float(j < quarter ? r : c) * freqf;
    const float a = v[2 * j].item<float>(), b = v[2 * j + 1].item<float>();
    out[2 * j] = a * std::cos(ang) - b * std::sin(ang);
    out[2 * j + 1] = a * std::sin(ang) + b * std::cos(ang);
  }
  return out;
}

// x [T, dim] inputs at positions 0..T-1 of one sequence; visible[i][j] says whether query i may
// attend key j (before forcing the diagonal). Returns logits [T, vocab].
inline at::Tensor ref_forward(const model::GptConfig& cfg, const model::TensorMap& w,
                              const at::Tensor& x, const at::Tensor& positions,
                              const at::Tensor& visible) {
  const int64_t T = x.size(0), H = cfg.n_head, hd = cfg.head_dim();
  auto rms = [&](const at::Tensor& h, const at::Tensor& g) {
    return h / at::sqrt((h * h).mean(-1, true) + cfg.norm_eps) * g;
  };
  auto L = [&](int64_t i, const std::string& n) {
    return w.at("layers." + std::to_string(i) + "." + n);
  };
  auto h = x.clone();
  for (int64_t l = 0; l < cfg.n_layer; ++l) {
    auto xn = rms(h, L(l, "attention_norm.weight"));
    auto qkv = at::matmul(xn, L(l, "attention.wqkv.weight").t());
    auto q = qkv.narrow(1, 0, cfg.dim), k = qkv.narrow(1, cfg.dim, cfg.dim),
         v = qkv.narrow(1, 2 * cfg.dim, cfg.dim);
    auto attn_out = at::zeros({T, cfg.dim});
    for (int64_t head = 0; head < H; ++head) {
      auto qh = at::zeros({T, hd}), kh = at::zeros({T, hd});
      for (int64_t t = 0; t < T; ++t) {
        const int64_t p = positions[t].item<int64_t>();
        qh[t] = ref_rope(q[t].narrow(0, head * hd, hd), p, cfg.cond_tokens(), cfg.grid_h,
                         cfg.rope_base);
        kh[t] = ref_rope(k[t].narrow(0, head * hd, hd), p, cfg.cond_tokens(), cfg.grid_h,
                         cfg.rope_base);
      }
      auto vh = v.narrow(1, head * hd, hd);
      auto s = at::matmul(qh, kh.t()) / std::sqrt(double(hd));
      auto vis = visible.clone();
      vis.diagonal().fill_(true);
      s = s.masked_fill(vis.logical_not(), -std::numeric_limits<float>::infinity());
      attn_out.narrow(1, head * hd, hd).copy_(at::matmul(at::softmax(s, -1), vh));
    }
    h = h + at::matmul(attn_out, L(l, "attention.wo.weight").t());
    auto hn = rms(h, L(l, "ffn_norm.weight"));
    auto a = at::matmul(hn, L(l, "feed_forward.w1.weight").t());
    auto b = at::matmul(hn, L(l, "feed_forward.w3.weight").t());
    h = h + at::matmul(a * at::sigmoid(a) * b, L(l, "feed_forward.w2.weight").t());
  }
  return at::matmul(rms(h, w.at("norm.weight")), w.at("output.weight").t());
}

}  // namespace adtree::testing
