// The exact distribution of the first three image tokens of a tiny target (vocabulary 4, 2x2 grid),
// by enumeration under the same logits processing as sampling, and the chi-square tools the
// sampling-losslessness tests compare speculative samples with.
#pragma once
#include <cmath>
#include <map>
#include <vector>

#include "decode/sampling.h"
#include "model/llamagen/gpt.h"

namespace adtree::testing {

inline model::GptConfig tiny_config() {
  model::GptConfig c;
  c.dim = 32, c.n_layer = 1, c.n_head = 2, c.vocab_size = 4, c.grid_h = c.grid_w = 2;
  c.cond = model::CondKind::Caption, c.cond_len = 2, c.cap_dim = 8, c.num_words = 3;
  c.multiple_of = 32;
  return c;
}

// Exact p(z0, z1, z2) under the same logits processing as sampling.
inline std::vector<double> exact_joint(const model::Gpt& gpt, const model::Condition& cond,
                                       const decode::SamplingParams& sp) {
  decode::LogitsProcessor proc(sp);
  const int64_t V = gpt.config().vocab_size;
  std::vector<double> joint(size_t(V * V * V), 0.0);
  auto cache = gpt.new_cache(2);
  auto p0 = proc.process(gpt.prefill(cache, cond).logits, 0).probs[0];
  for (int64_t a = 0; a < V; ++a) {
    auto tok = at::full({2, 1}, a, at::kLong);
    auto p1 = proc.process(gpt.forward_tokens(cache, tok, 0).logits, 1).probs[0];
    cache.commit();
    for (int64_t b = 0; b < V; ++b) {
      auto p2 = proc.process(gpt.forward_tokens(cache, at::full({2, 1}, b, at::kLong), 1).logits, 2)
                    .probs[0];
      cache.pending = 0;
      for (int64_t c = 0; c < V; ++c) {
        joint[size_t((a * V + b) * V + c)] =
            double(p0[a].item<float>()) * p1[b].item<float>() * p2[c].item<float>();
      }
    }
    cache.truncate(cache.len - 1);
  }
  return joint;
}

// Chi-square quantile by Wilson-Hilferty (accurate to a few percent at these degrees of freedom).
inline double chi2_quantile(double dof, double z) {
  const double a = 2.0 / (9.0 * dof);
  return dof * std::pow(1.0 - a + z * std::sqrt(a), 3.0);
}

inline double chi_square(const std::map<int64_t, int64_t>& counts, const std::vector<double>& p,
                         int64_t n) {
  double chi2 = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    const double e = p[i] * double(n);
    const double o = counts.count(int64_t(i)) ? double(counts.at(int64_t(i))) : 0.0;
    if (e > 0) chi2 += (o - e) * (o - e) / e;
  }
  return chi2;
}

}  // namespace adtree::testing
