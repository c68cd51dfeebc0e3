#include "model/continuous/token_colours.h"

#include <algorithm>
#include <cmath>

#include "model/continuous/continuous_dir.h"
#include "util/error.h"

namespace adtree::model {

std::vector<float> fit_token_colours(const ContinuousBundle& m, const at::Tensor& grids) {
  at::NoGradGuard no_grad;
  const auto& g = m.target->config().backbone;
  const int64_t dim = m.target->config().token_dim(), f = m.vae->config().downsample_factor();
  if (grids.dim() != 3 || grids.size(1) != g.grid_h * g.grid_w || grids.size(2) != dim)
    throw Error("token colours: the grids are not [G, " + std::to_string(g.grid_h * g.grid_w) +
                ", " + std::to_string(dim) + "] tokens of this model");
  std::vector<at::Tensor> xs, ys;
  for (int64_t i = 0; i < grids.size(0); ++i) {
    const auto tokens = grids[i].to(at::kFloat);
    // Each cell's f x f pixels averaged: [H*f, W*f, 3] -> [H*W, 3].
    const auto rgb = m.picture(tokens).to(at::kFloat);
    ys.push_back(rgb.reshape({g.grid_h, f, g.grid_w, f, 3}).mean({1, 3}).reshape({-1, 3}));
    xs.push_back(at::cat({tokens, at::ones({tokens.size(0), 1})}, 1));
  }
  const auto x = at::cat(xs).to(at::kDouble), y = at::cat(ys).to(at::kDouble);
  // Normal equations with a whisper of ridge: D + 1 unknowns per channel, thousands of cells.
  const auto xtx = at::mm(x.t(), x) + 1e-6 * at::eye(dim + 1, at::kDouble);
  const auto map = at::linalg_solve(xtx, at::mm(x.t(), y)).to(at::kFloat).contiguous();
  if (!map.isfinite().all().item<bool>()) throw Error("token colours: the fit is not finite");
  return std::vector<float>(map.data_ptr<float>(), map.data_ptr<float>() + map.numel());
}

std::array<uint8_t, 3> token_colour(const std::vector<float>& map, const float* v, int64_t dim) {
  if (int64_t(map.size()) != (dim + 1) * 3)
    throw Error("the token colour map is not (" + std::to_string(dim) + " + 1) x 3 numbers");
  std::array<uint8_t, 3> out{};
  for (int c = 0; c < 3; ++c) {
    double s = map[size_t(dim * 3 + c)];  // the constant row
    for (int64_t d = 0; d < dim; ++d) s += double(v[d]) * map[size_t(d * 3 + c)];
    out[size_t(c)] = uint8_t(std::clamp(std::lround(s), 0L, 255L));
  }
  return out;
}

}  // namespace adtree::model
