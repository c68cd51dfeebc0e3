#include "model/continuous/lean_head.h"

#include <cmath>

#include "model/cpu/pack_rows.h"
#include "model/cpu/packed_gemm.h"
#include "util/error.h"

namespace adtree::model {

namespace {

const at::Tensor& head_param(const DiffusionHead& h, const std::string& name) {
  return h.weights().at(name);
}

PackedWeight head_packed(const DiffusionHead& h, const std::string& name, bool bf16) {
  const auto& w = head_param(h, name + ".weight").contiguous();
  auto p = bf16 ? pack_weight_bf16(w) : pack_weight(w);
  if (!p.defined()) throw Error("the lean head needs fp32 CPU weights (" + name + ")");
  return p;
}

float head_silu(float v) {
  return v / (1.0f + std::exp(-v));
}

// LayerNorm over w of each row (eps 1e-6), then (1 + scale) * n + shift; gamma/beta optional.
void head_modulated_norm(const float* h, int64_t R, int64_t w, const float* gamma,
                         const float* beta, const float* mod, int64_t mod_stride, float* out) {
  for (int64_t r = 0; r < R; ++r) {
    const float* x = h + r * w;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < w; ++i) mean += x[i];
    mean /= double(w);
    for (int64_t i = 0; i < w; ++i) var += (x[i] - mean) * (x[i] - mean);
    const float inv = float(1.0 / std::sqrt(var / double(w) + 1e-6));
    const float* shift = mod + r * mod_stride;
    const float* scale = shift + w;
    for (int64_t i = 0; i < w; ++i) {
      float n = (x[i] - float(mean)) * inv;
      if (gamma) n = n * gamma[i] + beta[i];
      out[r * w + i] = n * (1.0f + scale[i]) + shift[i];
    }
  }
}

}  // namespace

LeanHead::LeanHead(const DiffusionHead& head, const DiffusionSchedule& schedule, bool bf16)
    : cfg_(head.config()), schedule_(schedule) {
  {
    at::NoGradGuard no_grad;
    std::vector<int64_t> ts(schedule.timesteps().begin(), schedule.timesteps().end());
    const auto t = at::tensor(ts, at::TensorOptions().dtype(at::kLong));
    const auto e = DiffusionHead::time_embedding(t, cfg_.freq_dim);
    auto lin = [&](const at::Tensor& x, const std::string& n) {
      return at::linear(x, head_param(head, n + ".weight"), head_param(head, n + ".bias"));
    };
    time_table_ = lin(at::silu(lin(e, "time_embed.0")), "time_embed.2").contiguous();
  }
  input_proj_ = head_packed(head, "input_proj", bf16);
  input_proj_b_ = head_param(head, "input_proj.bias").contiguous();
  cond_embed_ = head_packed(head, "cond_embed", bf16);
  cond_embed_b_ = head_param(head, "cond_embed.bias").contiguous();
  final_ada_ = head_packed(head, "final.ada", bf16);
  final_ada_b_ = head_param(head, "final.ada.bias").contiguous();
  final_linear_ = head_packed(head, "final.linear", bf16);
  final_linear_b_ = head_param(head, "final.linear.bias").contiguous();
  for (int64_t i = 0; i < cfg_.blocks; ++i) {
    const std::string p = "blocks." + std::to_string(i) + ".";
    blocks_.push_back({head_packed(head, p + "ada", bf16), head_packed(head, p + "mlp.0", bf16),
                       head_packed(head, p + "mlp.2", bf16),
                       head_param(head, p + "ada.bias").contiguous(),
                       head_param(head, p + "mlp.0.bias").contiguous(),
                       head_param(head, p + "mlp.2.bias").contiguous(),
                       head_param(head, p + "ln.weight").contiguous(),
                       head_param(head, p + "ln.bias").contiguous()});
  }
}

void LeanHead::forward(int k, const float* x, const float* c, int64_t R, float* out) const {
  const int64_t w = cfg_.width;
  std::vector<float> h(size_t(R * w)), a(size_t(R * w)), mod(size_t(R * 3 * w)), n(size_t(R * w)),
      u(size_t(R * w));
  packed_gemm(x, R, input_proj_, input_proj_b_.data_ptr<float>(), h.data());
  const float* tk = time_table_.data_ptr<float>() + int64_t(k) * w;
  for (int64_t r = 0; r < R; ++r) {
    for (int64_t i = 0; i < w; ++i) a[size_t(r * w + i)] = head_silu(tk[i] + c[r * w + i]);
  }
  for (const auto& b : blocks_) {
    packed_gemm(a.data(), R, b.ada, b.ada_b.data_ptr<float>(), mod.data());  // shift|scale|gate
    head_modulated_norm(h.data(), R, w, b.ln_w.data_ptr<float>(), b.ln_b.data_ptr<float>(),
                        mod.data(), 3 * w, n.data());
    packed_gemm(n.data(), R, b.mlp0, b.mlp0_b.data_ptr<float>(), u.data());
    for (float& v : u) v = head_silu(v);
    packed_gemm(u.data(), R, b.mlp2, b.mlp2_b.data_ptr<float>(), n.data());
    for (int64_t r = 0; r < R; ++r) {
      const float* gate = mod.data() + r * 3 * w + 2 * w;
      for (int64_t i = 0; i < w; ++i) h[size_t(r * w + i)] += gate[i] * n[size_t(r * w + i)];
    }
  }
  packed_gemm(a.data(), R, final_ada_, final_ada_b_.data_ptr<float>(), mod.data());  // shift|scale
  head_modulated_norm(h.data(), R, w, nullptr, nullptr, mod.data(), 2 * w, n.data());
  packed_gemm(n.data(), R, final_linear_, final_linear_b_.data_ptr<float>(), out);
}

HeadTrajectory LeanHead::sample(const at::Tensor& z, const at::Tensor& z_uncond, double cfg,
                                double temperature, const at::Tensor& x_T,
                                const at::Tensor& noise) const {
  const int64_t B = x_T.size(0), D = cfg_.token_dim, K = schedule_.sample_steps(), w = cfg_.width;
  if (noise.dim() != 3 || noise.size(0) != B || noise.size(1) != K || noise.size(2) != D) {
    throw Error("the head's noises must be [B, " + std::to_string(K) + ", " + std::to_string(D) +
                "]");
  }
  if (!(temperature > 0)) throw Error("the head's temperature must be > 0");
  const bool guided = z_uncond.defined() && cfg != 1.0;
  const int64_t R = guided ? 2 * B : B;
  // Rows [cond; uncond]: cond_embed once per token.
  const auto zz = (guided ? at::cat({z, z_uncond}) : z).to(at::kFloat).contiguous();
  std::vector<float> c(size_t(R * w)), xr(size_t(R * D)), out(size_t(R * 2 * D));
  packed_gemm(zz.data_ptr<float>(), R, cond_embed_, cond_embed_b_.data_ptr<float>(), c.data());
  const auto nz = noise.to(at::kFloat).contiguous();
  at::Tensor x = x_T.to(at::kFloat).contiguous().clone();
  HeadTrajectory tr;
  tr.log_std_before_last = at::zeros({B}, at::kDouble);
  tr.last_mean = at::empty({B, D}, at::kFloat);
  tr.last_log_std = at::empty({B, D}, at::kFloat);
  const float log_temp = float(std::log(temperature));
  const auto nd = static_cast<size_t>(D);
  std::vector<float> eps(nd), mean(nd), log_std(nd);
  float* xp = x.data_ptr<float>();
  const float* np = nz.data_ptr<float>();
  double* lsb = tr.log_std_before_last.data_ptr<double>();
  float* last_mean = tr.last_mean.data_ptr<float>();
  float* last_log_std = tr.last_log_std.data_ptr<float>();
  for (int64_t step = 0; step < K; ++step) {
    const int k = int(K - 1 - step);
    for (int64_t r = 0; r < R; ++r)
      std::copy(xp + (r % B) * D, xp + (r % B + 1) * D, &xr[size_t(r * D)]);
    forward(k, xr.data(), c.data(), R, out.data());
    for (int64_t b = 0; b < B; ++b) {
      const float* oc = &out[size_t(b * 2 * D)];
      for (int64_t d = 0; d < D; ++d) {
        eps[size_t(d)] = guided ? out[size_t((B + b) * 2 * D + d)] +
                                      float(cfg) * (oc[d] - out[size_t((B + b) * 2 * D + d)])
                                : oc[d];
      }
      schedule_.reverse_step(k, xp + b * D, eps.data(), oc + D, int(D), mean.data(),
                             log_std.data());
      const float* e = np + (b * K + step) * D;
      for (int64_t d = 0; d < D; ++d) {
        const float ls = log_std[size_t(d)] + log_temp;
        xp[b * D + d] = mean[size_t(d)] + std::exp(ls) * e[d];
        if (k == 0) {
          last_mean[b * D + d] = mean[size_t(d)];
          last_log_std[b * D + d] = ls;
        } else {
          lsb[b] += double(ls);
        }
      }
    }
  }
  tr.x0 = x;
  return tr;
}

}  // namespace adtree::model
