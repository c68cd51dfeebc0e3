// The continuous family's diffusion head (core/model/continuous/diffusion_head.h) against the
// same formulas written out here element by element in double precision (random weights, the
// zero-initialised modulations filled too): the time embedding, the adaLN blocks, the final layer,
// and CFG on the epsilon halves.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "model/continuous/diffusion_head.h"
#include "model/continuous/head_sampler.h"
#include "model/params.h"
#include "util/error.h"

using namespace adtree::model;

namespace {

using Vec = std::vector<double>;

Vec row(const at::Tensor& t) {  // a 1-D tensor as doubles
  const auto c = t.to(at::kDouble).contiguous();
  return Vec(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

Vec lin(const TensorMap& w, const std::string& n, const Vec& x) {
  const auto W = w.at(n + ".weight").to(at::kDouble);
  const Vec b = row(w.at(n + ".bias"));
  Vec y(b);
  for (size_t o = 0; o < y.size(); ++o) {
    for (size_t i = 0; i < x.size(); ++i) y[o] += W[int64_t(o)][int64_t(i)].item<double>() * x[i];
  }
  return y;
}

Vec silu(Vec v) {
  for (double& x : v) x = x / (1.0 + std::exp(-x));
  return v;
}

Vec norm(const Vec& v, const Vec* g, const Vec* b) {
  double m = 0, s = 0;
  for (double x : v) m += x;
  m /= double(v.size());
  for (double x : v) s += (x - m) * (x - m);
  s /= double(v.size());
  Vec o(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    o[i] = (v[i] - m) / std::sqrt(s + 1e-6) * (g ? (*g)[i] : 1.0) + (b ? (*b)[i] : 0.0);
  }
  return o;
}

Vec reference(const DiffusionHeadConfig& c, const TensorMap& w, const Vec& x, double t,
              const Vec& z) {
  const size_t W = size_t(c.width), half = size_t(c.freq_dim / 2);
  Vec emb(size_t(c.freq_dim));
  for (size_t i = 0; i < half; ++i) {
    const double f = std::exp(-std::log(10000.0) * double(i) / double(half));
    emb[i] = std::cos(t * f), emb[half + i] = std::sin(t * f);
  }
  Vec y = lin(w, "time_embed.2", silu(lin(w, "time_embed.0", emb)));
  const Vec cz = lin(w, "cond_embed", z);
  for (size_t i = 0; i < W; ++i) y[i] += cz[i];
  Vec h = lin(w, "input_proj", x);
  for (int64_t k = 0; k < c.blocks; ++k) {
    const std::string p = "blocks." + std::to_string(k) + ".";
    const Vec mod = lin(w, p + "ada", silu(y));
    const Vec g = row(w.at(p + "ln.weight")), b = row(w.at(p + "ln.bias"));
    Vec n = norm(h, &g, &b);
    for (size_t i = 0; i < W; ++i) n[i] = n[i] * (1 + mod[W + i]) + mod[i];
    const Vec m = lin(w, p + "mlp.2", silu(lin(w, p + "mlp.0", n)));
    for (size_t i = 0; i < W; ++i) h[i] += mod[2 * W + i] * m[i];
  }
  const Vec mod = lin(w, "final.ada", silu(y));
  Vec n = norm(h, nullptr, nullptr);
  for (size_t i = 0; i < W; ++i) n[i] = n[i] * (1 + mod[W + i]) + mod[i];
  return lin(w, "final.linear", n);
}

TensorMap random_weights(const DiffusionHeadConfig& c) {
  TensorMap w;
  at::manual_seed(3);
  for (const auto& s : diffusion_head_param_specs(c)) w[s.name] = at::randn(s.shape) * 0.3;
  return w;
}

}  // namespace

TEST(DiffusionHead, MatchesTheFormulasElementByElement) {
  DiffusionHeadConfig c;
  c.token_dim = 3, c.cond_dim = 5, c.width = 8, c.blocks = 2, c.freq_dim = 16;
  const auto w = random_weights(c);
  const DiffusionHead head(c, w);
  const auto x = at::randn({2, 3}), z = at::randn({2, 5});
  const auto t = at::tensor({0, 731}, at::kLong);
  const auto out = head.forward(x, t, z);
  ASSERT_EQ(out.sizes(), (std::vector<int64_t>{2, 6}));
  for (int64_t r = 0; r < 2; ++r) {
    const Vec want = reference(c, w, row(x[r]), double(t[r].item<int64_t>()), row(z[r]));
    for (int64_t j = 0; j < 6; ++j) EXPECT_NEAR(out[r][j].item<double>(), want[size_t(j)], 1e-4);
  }
}

TEST(DiffusionHead, CfgMixesTheEpsilonHalvesAndKeepsEachVariance) {
  DiffusionHeadConfig c;
  c.token_dim = 2, c.cond_dim = 4, c.width = 8, c.blocks = 1, c.freq_dim = 8;
  const DiffusionHead head(c, random_weights(c));
  const auto x1 = at::randn({1, 2});
  const auto x = at::cat({x1, x1}), z = at::randn({2, 4}), t = at::tensor({50, 50}, at::kLong);
  const auto plain = head.forward(x, t, z), mixed = head.forward_cfg(x, t, z, 3.0);
  const auto want =
      plain[1].narrow(0, 0, 2) + 3.0 * (plain[0].narrow(0, 0, 2) - plain[1].narrow(0, 0, 2));
  EXPECT_TRUE(at::allclose(mixed[0].narrow(0, 0, 2), want, 1e-5, 1e-6));
  EXPECT_TRUE(at::allclose(mixed[1].narrow(0, 0, 2), want, 1e-5, 1e-6));
  EXPECT_TRUE(at::equal(mixed.narrow(1, 2, 2), plain.narrow(1, 2, 2)));
  EXPECT_THROW(head.forward_cfg(x1, t.narrow(0, 0, 1), z.narrow(0, 0, 1), 3.0), adtree::Error);
}

// Two heads from the same noises (CSpD's alignment): the same head gives the same trajectory; the
// returned pieces are what the steps give, and the token follows the last step's Gaussian.
TEST(DiffusionHead, SamplingFromGivenNoisesIsReproducibleAndConsistent) {
  DiffusionHeadConfig c;
  c.token_dim = 2, c.cond_dim = 4, c.width = 8, c.blocks = 1, c.freq_dim = 8;
  const DiffusionHead head(c, random_weights(c));
  const DiffusionSchedule schedule(1000, 4);
  at::manual_seed(9);
  const auto z = at::randn({3, 4}), zu = at::randn({3, 4});
  const auto xT = at::randn({3, 2}), noise = at::randn({3, 4, 2});
  const auto a = sample_head(head, schedule, z, zu, 2.0, 0.9, xT, noise);
  const auto b = sample_head(head, schedule, z, zu, 2.0, 0.9, xT, noise);
  EXPECT_TRUE(at::equal(a.x0, b.x0));
  const auto last = a.last_mean + at::exp(a.last_log_std) * noise.select(1, 3);
  EXPECT_TRUE(at::allclose(a.x0, last, 1e-5, 1e-6));
  EXPECT_EQ(a.log_std_before_last.sizes(), (std::vector<int64_t>{3}));
  EXPECT_THROW(sample_head(head, schedule, z, zu, 2.0, 0.9, xT, noise.narrow(1, 0, 3)),
               adtree::Error);
}
