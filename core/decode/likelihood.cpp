#include "decode/likelihood.h"

#include <c10/core/InferenceMode.h>

#include <cmath>

#include "util/error.h"

namespace adtree::decode {

double sequence_nll(const model::Gpt& gpt, const model::Condition& cond,
                    const std::vector<int64_t>& tokens, const SamplingParams& sampling) {
  c10::InferenceMode guard;
  if (tokens.empty()) throw Error("no tokens to score");
  sampling.check_condition_batch(cond.batch());
  const int64_t batch = cond.batch();
  const int64_t n = int64_t(tokens.size());
  auto cache = gpt.new_cache(batch, n);
  auto first = gpt.prefill(cache, cond).logits;  // predicts token 0
  at::Tensor logits = first;
  if (n > 1) {
    auto in = at::tensor(std::vector<int64_t>(tokens.begin(), tokens.end() - 1),
                         at::TensorOptions().dtype(at::kLong))
                  .unsqueeze(0)
                  .expand({batch, n - 1})
                  .contiguous();
    auto rest = gpt.forward_tokens(cache, in, 0).logits;  // row i predicts token i + 1
    logits = at::cat({first.narrow(1, first.size(1) - 1, 1), rest}, 1);
  } else {
    logits = first.narrow(1, first.size(1) - 1, 1);
  }
  LogitsProcessor proc(sampling, gpt.config().image_tokens());
  auto p = proc.process(logits, 0).view.to(at::kCPU, at::kFloat).contiguous();  // [n, V]
  const int64_t v = p.size(1);
  const float* d = p.data_ptr<float>();
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t t = tokens[size_t(i)];
    if (t < 0 || t >= v) throw Error("token out of the vocabulary");
    // A token the processed distribution excludes (top-k / top-p) would be -inf: floor it, so a
    // relaxed method that commits such tokens shows as very unlikely rather than breaking the mean.
    total -= std::log(std::max(double(d[i * v + t]), 1e-12));
  }
  return total / double(n);
}

}  // namespace adtree::decode
