// The continuous family's tokenizer and transformer (core/model/continuous/kl_vae.h,
// continuous_gpt.h) against independent paths: the KL VAE's moments and decoder against the VQ
// model built from the same trunk weights (the VQ is checked against the reference elsewhere), the
// latent scale round trip; the KV-cached continuous transformer against one causal forward over
// the whole sequence and its input projection against the formula.
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "model/conditioning.h"
#include "model/continuous/continuous_gpt.h"
#include "model/continuous/kl_vae.h"
#include "model/llamagen/vq.h"
#include "util/error.h"

using namespace adtree::model;

namespace {

KlVaeConfig continuous_small_vae() {
  KlVaeConfig c;
  c.latent_dim = 3;
  c.ch = 8;
  c.ch_mult = {1, 2};
  c.z_channels = 8;
  c.norm_groups = 4;
  c.latent_scale = 1.7;
  return c;
}

// A VQ of the same trunks whose codebook_dim is `dim`: its encoder and quant_conv are the VAE's
// (encoder true), or its post_quant_conv is (encoder false); the decoder is always the VAE's.
VqModel continuous_vq_with(const KlVaeConfig& c, const TensorMap& w, int64_t dim, bool encoder) {
  auto v = c.trunk();
  v.codebook_size = 4;
  v.codebook_dim = dim;
  TensorMap vw;
  for (const auto& [k, t] : w) {
    const bool enc = k.rfind("encoder.", 0) == 0 || k.rfind("quant_conv.", 0) == 0;
    const bool post = k.rfind("post_quant_conv.", 0) == 0;
    if (k.rfind("decoder.", 0) == 0 || (encoder && enc) || (!encoder && post)) vw.emplace(k, t);
  }
  if (encoder) {  // a placeholder post_quant_conv of `dim` inputs (the decoder is not used)
    vw["post_quant_conv.weight"] = at::zeros({v.z_channels, dim, 1, 1});
    vw["post_quant_conv.bias"] = at::zeros({v.z_channels});
  }
  vw["quantize.embedding.weight"] = at::randn({4, dim});
  return VqModel(v, vw);
}

}  // namespace

TEST(KlVae, MomentsAndDecoderAreTheVqTrunksWithAGaussianBottleneck) {
  const auto c = continuous_small_vae();
  const auto w = init_params(kl_vae_param_specs(c, true), 5);
  const KlVae vae(c, w);
  auto gen = at::detail::createCPUGenerator(1);
  const auto x = at::rand({2, 3, 8, 8}, gen) * 2 - 1;
  const auto m = vae.encode(x);
  const auto both =
      continuous_vq_with(c, w, 2 * c.latent_dim, true).encode(x);  // quant_conv: 2D channels
  EXPECT_TRUE(at::allclose(m.mean, both.narrow(1, 0, 3), 1e-5, 1e-6));
  EXPECT_TRUE(at::allclose(m.logvar, both.narrow(1, 3, 3).clamp(-30, 20), 1e-5, 1e-6));
  const auto z = at::randn({2, 3, 4, 4}, gen);
  const auto want = continuous_vq_with(c, w, c.latent_dim, false).decode_latents(z);
  EXPECT_TRUE(at::allclose(vae.decode_latents(z), want, 1e-5, 1e-6));
  // Tokens are row-major cells of mean * latent_scale; decode divides the scale back out.
  const auto tok = vae.tokens_of(x);
  EXPECT_EQ(tok.sizes(), (std::vector<int64_t>{2, 16, 3}));
  EXPECT_TRUE(at::allclose(tok[1][5], m.mean[1].select(1, 1).select(1, 1) * 1.7, 1e-5, 1e-6));
  EXPECT_TRUE(at::allclose(vae.decode(tok, 4, 4), vae.decode_latents(m.mean), 1e-4, 1e-5));
  // A prefix decodes with zero tokens after it.
  const auto part = vae.decode(tok.narrow(1, 0, 5), 4, 4);
  auto padded = tok.clone();
  padded.narrow(1, 5, 11).zero_();
  EXPECT_TRUE(at::allclose(part, vae.decode(padded, 4, 4), 1e-5, 1e-6));
}

TEST(KlVae, BadConfigsAndInputsAreErrors) {
  auto c = continuous_small_vae();
  c.latent_dim = 0;
  EXPECT_THROW(c.validate(), adtree::Error);
  c = continuous_small_vae();
  c.latent_scale = -1;
  EXPECT_THROW(c.validate(), adtree::Error);
  const auto good = continuous_small_vae();
  const KlVae vae(good, init_params(kl_vae_param_specs(good, false), 1));
  EXPECT_THROW(vae.encode(at::zeros({1, 3, 8, 8})), adtree::Error);  // no encoder
  EXPECT_THROW(vae.decode(at::zeros({1, 17, 3}), 4, 4), adtree::Error);
  EXPECT_THROW(vae.decode(at::zeros({1, 4, 2}), 4, 4), adtree::Error);
  EXPECT_THROW(KlVaeConfig::from_json(nlohmann::json{{"latent_dim", 2.5}}), adtree::Error);
}

TEST(ContinuousGpt, CachedStepsAreTheWholeSequencesCausalForward) {
  ContinuousConfig c;
  c.backbone = GptConfig::preset("micro");
  c.backbone.vocab_size = 2;
  c.head.token_dim = 3;
  c.head.cond_dim = c.backbone.dim;
  c.head.width = 16;
  c.head.blocks = 1;
  c.head.freq_dim = 16;
  c.train_steps = 20;
  c.sample_steps = 4;
  const auto w = init_params(continuous_param_specs(c), 9);
  const ContinuousGpt m(c, w);
  const auto cond = condition_from_words(m.backbone(), {2, 3}, false);
  auto gen = at::detail::createCPUGenerator(4);
  const auto tokens = at::randn({1, 5, 3}, gen);
  // The input projection is token_proj's affine map.
  EXPECT_TRUE(at::allclose(
      m.embed(tokens), at::matmul(tokens, w.at("token_proj.weight").t()) + w.at("token_proj.bias"),
      1e-5, 1e-6));
  // Cached: the prefill's z_0, then tokens one at a time.
  auto cache = m.backbone().new_cache(1, 8);
  std::vector<at::Tensor> z{m.prefill(cache, cond)};
  for (int64_t i = 0; i < 5; ++i) {
    z.push_back(m.forward_tokens(cache, tokens.narrow(1, i, 1), i).select(1, 0));
    cache.commit();
  }
  // One forward over [condition, tokens] with no cache (the caption's padding hidden, as the
  // prefill hides it).
  const auto x = at::cat({m.backbone().embed_condition(cond), m.embed(tokens)}, 1);
  const int64_t C = c.backbone.cond_tokens();
  const auto pos = at::arange(x.size(1), at::TensorOptions().dtype(at::kLong));
  const auto valid = at::cat({cond.caption_mask, at::ones({1, 5}, at::kBool)}, 1);
  const auto h = m.backbone().forward(x, pos, nullptr, {}, valid, -1).hidden;
  for (int64_t i = 0; i <= 5; ++i) {
    EXPECT_TRUE(at::allclose(z[size_t(i)], h.select(1, C - 1 + i), 1e-4, 1e-5)) << "z_" << i;
  }
  EXPECT_THROW(m.embed(at::zeros({1, 2, 4})), adtree::Error);
}

TEST(ContinuousGpt, ConfigsThatCannotWorkAreErrors) {
  ContinuousConfig c;
  c.backbone = GptConfig::preset("micro");
  c.head.cond_dim = c.backbone.dim + 1;
  EXPECT_THROW(c.validate(), adtree::Error);
  c.head.cond_dim = c.backbone.dim;
  c.sample_steps = c.train_steps + 1;
  EXPECT_THROW(c.validate(), adtree::Error);
  EXPECT_THROW(ContinuousConfig::from_json(nlohmann::json{{"head", {}}}), adtree::Error);
}
