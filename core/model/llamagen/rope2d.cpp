#include "model/llamagen/rope2d.h"

#include <cmath>

#include "util/error.h"

namespace adtree::model {

Rope2d::Rope2d(int64_t head_dim, int64_t cond_tokens, int64_t grid, double base) {
  if (head_dim % 4 != 0) throw Error("2-D RoPE needs head_dim divisible by 4");
  const int64_t quarter = head_dim / 4;  // pairs per axis
  // freq_i = base^(-2i / (head_dim/2)), i = 0 .. head_dim/4 - 1, in fp32 as the reference does.
  auto freqs =
      at::pow(base, at::arange(0, 2 * quarter, 2, at::kFloat) / float(head_dim / 2)).reciprocal();
  auto idx = at::arange(grid, at::kFloat);
  auto row_ang = at::outer(idx, freqs);  // [grid, quarter]
  // angles[r, c] = [row_ang[r], col_ang[c]] -> [grid*grid, head_dim/2]
  auto ang = at::cat({row_ang.unsqueeze(1).expand({grid, grid, quarter}),
                      row_ang.unsqueeze(0).expand({grid, grid, quarter})},
                     -1)
                 .reshape({grid * grid, 2 * quarter});
  auto zeros = at::zeros({cond_tokens, 2 * quarter}, at::kFloat);
  cos_ = at::cat({zeros, ang.cos()}, 0).contiguous();
  sin_ = at::cat({zeros, ang.sin()}, 0).contiguous();
  cis_ = at::view_as_complex(at::stack({cos_, sin_}, -1).contiguous());
}

at::Tensor Rope2d::apply(const at::Tensor& x, const at::Tensor& pos) const {
  if (pos.numel() > 0 &&
      (pos.min().item<int64_t>() < 0 || pos.max().item<int64_t>() >= seq_len())) {
    throw Error("RoPE position out of range (sequence length " + std::to_string(seq_len()) + ")");
  }
  return apply(x, cos_.index_select(0, pos), sin_.index_select(0, pos));
}

at::Tensor Rope2d::apply(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  // x viewed as complex pairs (a, b) -> (a cos - b sin, a sin + b cos); cos/sin broadcast over B,
  // H.
  const auto shape = x.sizes().vec();
  auto xf = x.to(at::kFloat).reshape({shape[0], shape[1], shape[2], shape[3] / 2, 2});
  auto a = xf.select(-1, 0), b = xf.select(-1, 1);
  auto c = cos.unsqueeze(0).unsqueeze(2), s = sin.unsqueeze(0).unsqueeze(2);  // [1, q, 1, hd/2]
  auto out = at::stack({a * c - b * s, a * s + b * c}, -1).reshape(shape);
  return out.to(x.scalar_type());
}

Rope2d Rope2d::to(const at::Device& device) const {
  Rope2d r;
  r.cos_ = cos_.to(device);
  r.sin_ = sin_.to(device);
  r.cis_ = cis_.to(device);
  return r;
}

}  // namespace adtree::model
