#include "train/head_unroll.h"

#include "util/error.h"

namespace adtree::train {

at::Tensor unroll_mask(int64_t n, int64_t passes) {
  auto mask = at::zeros({passes * n, passes * n}, at::kBool);
  auto m = mask.accessor<bool, 2>();
  for (int64_t p = 0; p < passes; ++p) {
    for (int64_t j = 0; j < n; ++j) {
      const int64_t row = p * n + j;
      for (int64_t i = 0; i <= j - p; ++i) m[row][i] = true;  // the committed prefix
      for (int64_t q = 1; q <= p; ++q) {
        const int64_t anc = j - p + q;  // the chain of predicted rows down to this one
        if (anc >= 0) m[row][q * n + anc] = true;
      }
      m[row][row] = true;  // rows j < p (no ancestor in the prefix) see themselves only
    }
  }
  return mask;
}

Unrolled unrolled_forward(const model::Drafter& head, const at::Tensor& feats,
                          const at::Tensor& tokens, const at::Tensor& pos, int64_t passes) {
  if (passes < 1) throw Error("training-time test: passes must be >= 1");
  const int64_t n = feats.size(1);
  Unrolled u;
  std::vector<at::Tensor> f{feats}, t{tokens}, ps{pos};
  for (int64_t p = 0; p < passes; ++p) {
    if (p > 0) {
      // Row j of pass p gets the feature row j - 1 of pass p - 1 predicted; row 0 keeps the true
      // one (it has no predicted parent and is left out of the losses).
      const auto& prev = u.hidden.back();
      f.push_back(at::cat({feats.narrow(1, 0, 1), prev.narrow(1, 0, n - 1)}, 1));
      t.push_back(tokens);
      ps.push_back(pos);
    }
    const auto mask = p == 0 ? at::Tensor() : unroll_mask(n, p + 1).to(feats.device());
    auto out = head.forward(nullptr, at::cat(f, 1), at::cat(t, 1), at::cat(ps), mask);
    u.hidden.push_back(out.hidden.narrow(1, p * n, n));
    u.logits.push_back(out.logits.narrow(1, p * n, n));
  }
  return u;
}

at::Tensor mixed_kl(const at::Tensor& target_logits, const at::Tensor& head_logits, double cfg,
                    double t) {
  const int64_t B = target_logits.size(0) / 2;
  auto mix = [&](const at::Tensor& l) {
    return (l.narrow(0, B, B) + cfg * (l.narrow(0, 0, B) - l.narrow(0, B, B))) / t;
  };
  const auto logp = at::log_softmax(mix(target_logits).detach(), -1);
  const auto logq = at::log_softmax(mix(head_logits), -1);
  return (logp.exp() * (logp - logq)).sum(-1);
}

}  // namespace adtree::train
