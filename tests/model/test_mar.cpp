// MAR's MAE encoder / decoder (model/mar/mar_backbone.h) against a second computation written
// from models/mar.py's description with explicit per-token loops (no batched attention, no index
// tricks), on the tiny preset with random weights; and the contracts the sampler relies on.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "model/mar/mar_backbone.h"
#include "util/error.h"

using namespace adtree;
using model::MarBackbone;
using model::MarConfig;

namespace {

// Random weights with every tensor non-trivial (MAR's own init zeroes biases and sets norms to 1,
// which would hide a missing bias or a swapped norm).
model::TensorMap random_weights(const MarConfig& c, uint64_t seed) {
  auto specs = model::mar_backbone_param_specs(c);
  for (auto& s : specs) s.init = model::Init::Normal, s.scale = 0.3;
  auto w = model::init_params(specs, seed);
  for (auto& [k, t] : w)
    if (k.find("norm") != std::string::npos && k.find(".weight") != std::string::npos) t += 1.0;
  return w;
}

at::Tensor ln(const at::Tensor& x, const model::TensorMap& w, const std::string& n, double eps) {
  const auto mu = x.mean(-1, true);
  const auto var = (x - mu).pow(2).mean(-1, true);
  return (x - mu) / (var + eps).sqrt() * w.at(n + ".weight") + w.at(n + ".bias");
}

at::Tensor lin(const at::Tensor& x, const model::TensorMap& w, const std::string& n) {
  return at::matmul(x, w.at(n + ".weight").t()) + w.at(n + ".bias");
}

// One ViT block on x [n, dim], attention by explicit loops over heads and query rows.
at::Tensor block_ref(const at::Tensor& x, const model::TensorMap& w, const std::string& p,
                     int64_t heads, double eps) {
  const int64_t n = x.size(0), dim = x.size(1), hd = dim / heads;
  const auto qkv = lin(ln(x, w, p + "norm1", eps), w, p + "attn.qkv");  // [n, 3 dim]
  auto out = at::zeros({n, dim});
  for (int64_t h = 0; h < heads; ++h) {
    const auto q = qkv.narrow(1, h * hd, hd), k = qkv.narrow(1, dim + h * hd, hd),
               v = qkv.narrow(1, 2 * dim + h * hd, hd);
    for (int64_t i = 0; i < n; ++i) {
      auto s = (k * q[i]).sum(1) / std::sqrt(double(hd));
      s = (s - s.max()).exp();
      out[i].narrow(0, h * hd, hd).copy_(((s / s.sum()).unsqueeze(1) * v).sum(0));
    }
  }
  auto y = x + lin(out, w, p + "attn.proj");
  const auto a = lin(ln(y, w, p + "norm2", eps), w, p + "mlp.fc1");
  return y + lin(0.5 * a * (1 + at::erf(a / std::sqrt(2.0))), w, p + "mlp.fc2");
}

// One row: tokens [N, D], unknown [N] bool, class embedding [E] -> z [N, Dd].
at::Tensor forward_ref(const MarConfig& c, const model::TensorMap& w, const at::Tensor& tokens,
                       const at::Tensor& unknown, const at::Tensor& cls) {
  const int64_t buf = c.buffer_size, n = c.seq_len();
  std::vector<at::Tensor> rows;
  std::vector<int64_t> slots;  // kept slot indices, buffer first
  for (int64_t s = 0; s < buf + n; ++s) {
    const bool is_buffer = s < buf;
    if (!is_buffer && unknown[s - buf].item<bool>()) continue;
    auto e = is_buffer ? cls.clone() : lin(tokens[s - buf], w, "z_proj");
    e = ln(e + w.at("encoder_pos_embed_learned")[0][s], w, "z_proj_ln", c.norm_eps);
    rows.push_back(e);
    slots.push_back(s);
  }
  auto x = at::stack(rows);
  for (int64_t i = 0; i < c.encoder_depth; ++i)
    x = block_ref(x, w, "encoder_blocks." + std::to_string(i) + ".", c.encoder_heads, c.norm_eps);
  x = lin(ln(x, w, "encoder_norm", c.norm_eps), w, "decoder_embed");
  auto y = w.at("mask_token")[0][0].repeat({buf + n, 1});
  for (size_t j = 0; j < slots.size(); ++j) y[slots[j]] = x[int64_t(j)];
  y = y + w.at("decoder_pos_embed_learned")[0];
  for (int64_t i = 0; i < c.decoder_depth; ++i)
    y = block_ref(y, w, "decoder_blocks." + std::to_string(i) + ".", c.decoder_heads, c.norm_eps);
  y = ln(y, w, "decoder_norm", c.norm_eps).narrow(0, buf, n);
  return y + w.at("diffusion_pos_embed_learned")[0];
}

}  // namespace

TEST(MarBackbone, MatchesPerTokenMathOnEveryMaskShape) {
  const auto c = MarConfig::preset("tiny");
  const auto w = random_weights(c, 1);
  const MarBackbone m(c, w);
  at::manual_seed(2);
  const auto tokens = at::randn({2, c.seq_len(), c.token_dim});
  const auto cls = m.class_embedding(at::tensor({3, -1}));
  EXPECT_TRUE(at::equal(cls[1], w.at("fake_latent")[0]));  // -1: CFG's null class
  for (int64_t known : {int64_t{0}, int64_t{5}, c.seq_len()}) {
    // Each row knows `known` tokens, at different places (MAR's orders differ per row).
    auto unknown = at::ones({2, c.seq_len()}, at::kBool);
    const auto order0 = at::randperm(c.seq_len()), order1 = at::randperm(c.seq_len());
    unknown[0].index_put_({order0.narrow(0, 0, known)}, false);
    unknown[1].index_put_({order1.narrow(0, 0, known)}, false);
    const auto z = m.forward(tokens, unknown, cls);
    ASSERT_EQ(z.sizes(), (std::vector<int64_t>{2, c.seq_len(), c.decoder_dim}));
    for (int64_t b = 0; b < 2; ++b) {
      const auto ref = forward_ref(c, w, tokens[b], unknown[b], cls[b]);
      EXPECT_LT((z[b] - ref).abs().max().item<double>(), 1e-4) << "known " << known << " row " << b;
    }
  }
}

TEST(MarBackbone, UnknownTokensAreIgnoredAndKnownOnesCount) {
  const auto c = MarConfig::preset("tiny");
  const MarBackbone m(c, random_weights(c, 3));
  at::manual_seed(4);
  auto tokens = at::randn({1, c.seq_len(), c.token_dim});
  auto unknown = at::ones({1, c.seq_len()}, at::kBool);
  unknown[0][2] = false;
  const auto cls = m.class_embedding(at::tensor({1}));
  const auto z = m.forward(tokens, unknown, cls);
  auto changed = tokens.clone();
  changed[0][7] += 5.0;  // unknown: ignored
  EXPECT_TRUE(at::allclose(m.forward(changed, unknown, cls), z));
  changed[0][2] += 5.0;  // known: every output moves (attention is bidirectional)
  const auto moved = (m.forward(changed, unknown, cls) - z).abs().amax({0, 2});
  EXPECT_GT(moved.min().item<double>(), 1e-6);
}

TEST(MarBackbone, BadInputsAreClearErrors) {
  const auto c = MarConfig::preset("tiny");
  auto w = random_weights(c, 5);
  const MarBackbone m(c, w);
  const auto tokens = at::zeros({2, c.seq_len(), c.token_dim});
  auto unknown = at::ones({2, c.seq_len()}, at::kBool);
  unknown[0][0] = false;  // row 0 knows one token, row 1 none
  const auto cls = m.class_embedding(at::tensor({0, 1}));
  EXPECT_THROW(m.forward(tokens, unknown, cls), Error);
  EXPECT_THROW(m.forward(tokens.narrow(1, 0, 3), unknown, cls), Error);
  EXPECT_THROW(m.class_embedding(at::tensor({c.num_classes})), Error);
  EXPECT_THROW(m.class_embedding(at::tensor({-2})), Error);
  w.erase("encoder_blocks.1.mlp.fc2.bias");
  EXPECT_THROW(MarBackbone(c, w), Error);
  EXPECT_THROW(MarConfig::preset("XXL"), Error);
}

TEST(MarConfig, PresetsAreTheReleasedShapes) {
  // Backbone and diffusion head together: MAR's README gives 208M, 479M and 943M (rounded).
  auto count = [](const std::vector<model::ParamSpec>& specs) {
    int64_t n = 0;
    for (const auto& s : specs) {
      int64_t k = 1;
      for (auto d : s.shape) k *= d;
      n += k;
    }
    return n;
  };
  const std::pair<const char*, int64_t> released[] = {
      {"B", 207924768}, {"L", 478326304}, {"H", 942403104}};
  for (const auto& [name, params] : released) {
    const auto c = MarConfig::preset(name);
    EXPECT_NO_THROW(c.validate());
    EXPECT_EQ(MarConfig::from_json(c.to_json()).to_json(), c.to_json());
    EXPECT_EQ(count(model::mar_backbone_param_specs(c)) +
                  count(model::diffusion_head_param_specs(c.head())),
              params)
        << name;
  }
  EXPECT_NO_THROW(MarConfig::preset("tiny").validate());
}
