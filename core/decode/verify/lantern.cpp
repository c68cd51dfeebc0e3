#include "decode/verify/lantern.h"

#include <c10/core/InferenceMode.h>

#include "util/error.h"

namespace adtree::decode {

at::Tensor latent_neighbours(const at::Tensor& codebook, int64_t k) {
  c10::InferenceMode guard;
  auto cb = codebook.to(at::kCPU, at::kFloat).contiguous();
  const int64_t V = cb.size(0);
  if (k < 1 || k >= V) throw Error("LANTERN k must be in 1.." + std::to_string(V - 1));
  auto sq = (cb * cb).sum(1);
  std::vector<at::Tensor> parts;
  for (int64_t s = 0; s < V; s += 1024) {
    const int64_t n = std::min<int64_t>(1024, V - s);
    auto rows = cb.narrow(0, s, n);
    auto d2 = sq.narrow(0, s, n).unsqueeze(1) + sq.unsqueeze(0) - 2 * at::matmul(rows, cb.t());
    // A code is not its own neighbour.
    d2.scatter_(1, at::arange(s, s + n, at::kLong).unsqueeze(1),
                std::numeric_limits<float>::infinity());
    parts.push_back(std::get<1>(d2.topk(k, 1, /*largest=*/false, /*sorted=*/true)));
  }
  return at::cat(parts, 0).contiguous();
}

LanternRule::LanternRule(at::Tensor neighbours, LanternSettings settings)
    : nb_(neighbours.to(at::kCPU, at::kLong).contiguous()), s_(settings) {
  if (s_.k > nb_.size(1)) throw Error("LANTERN k exceeds the neighbour table");
}

double LanternRule::relaxed(const std::vector<double>& p, int64_t x,
                            std::vector<int64_t>& absorbed) const {
  absorbed.clear();
  const int64_t* nb = nb_.data_ptr<int64_t>() + x * nb_.size(1);
  const double px = p[size_t(x)];
  const double limit = s_.mode == LanternMode::Delta ? s_.delta : (s_.lambda - 1.0) * px;
  double c = 0;
  for (int64_t m = 0; m < s_.k; ++m) {
    const double next = c + p[size_t(nb[m])];
    if (next > limit) break;  // m* = the largest m with c_m <= limit
    c = next;
    absorbed.push_back(nb[m]);
  }
  return px + c;
}

}  // namespace adtree::decode
