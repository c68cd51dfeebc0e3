// VQ tokenizer: tensor names/shapes against the LlamaGen reference, building blocks against direct
// formulas, quantise/decode properties on a small random model, and user-facing errors.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <set>
#include <string>

#include "error_of.h"
#include "model/llamagen/vq.h"
#include "small_vq.h"
#include "util/error.h"

using adtree::model::Init;
using adtree::model::ParamSpec;
using adtree::model::TensorMap;
using adtree::model::VqConfig;
using adtree::model::VqModel;
namespace vqd = adtree::model::detail;

using adtree::testing::error_of;

namespace {

VqConfig small_config() {
  return adtree::testing::small_vq_config();
}

VqModel small_model(bool with_encoder = true, uint64_t seed = 1) {
  auto cfg = small_config();
  return VqModel(
      cfg, adtree::model::init_params(adtree::model::vq_param_specs(cfg, with_encoder), seed));
}

const ParamSpec* find_spec(const std::vector<ParamSpec>& specs, const std::string& name) {
  for (const auto& s : specs)
    if (s.name == name) return &s;
  return nullptr;
}

void expect_close(const at::Tensor& a, const at::Tensor& b, double tol = 1e-5) {
  ASSERT_EQ(a.sizes(), b.sizes());
  EXPECT_LE((a - b).abs().max().item<double>(), tol);
}

}  // namespace

// ---- config ------------------------------------------------------------------------------------

TEST(VqConfig, JsonRoundTripKeepsEveryField) {
  auto c = small_config();
  c.norm_eps = 1e-5;
  auto back = VqConfig::from_json(c.to_json());
  EXPECT_EQ(back.to_json(), c.to_json());
  for (const char* k : {"codebook_size", "codebook_dim", "ch", "ch_mult", "z_channels",
                        "num_res_blocks", "norm_groups", "norm_eps"}) {
    EXPECT_TRUE(c.to_json().contains(k)) << k;
  }
}

TEST(VqConfig, MissingKeysKeepVq16Defaults) {
  auto c = VqConfig::from_json(nlohmann::json::object({{"codebook_size", 4096}}));
  EXPECT_EQ(c.codebook_size, 4096);
  EXPECT_EQ(c.codebook_dim, 8);
  EXPECT_EQ(c.ch, 128);
  EXPECT_EQ(c.ch_mult, (std::vector<int64_t>{1, 1, 2, 2, 4}));
  EXPECT_EQ(c.z_channels, 256);
  EXPECT_EQ(c.downsample_factor(), 16);
}

TEST(VqConfig, WrongTypesNameTheKey) {
  EXPECT_NE(error_of([] { VqConfig::from_json({{"ch", "128"}}); }).find("'ch'"), std::string::npos);
  EXPECT_NE(error_of([] {
              VqConfig::from_json({{"codebook_dim", 8.5}});
            }).find("codebook_dim"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              VqConfig::from_json({{"ch_mult", {1, "2"}}});
            }).find("ch_mult"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              VqConfig::from_json({{"norm_eps", true}});
            }).find("norm_eps"),
            std::string::npos);
  EXPECT_THROW(VqConfig::from_json(nlohmann::json::array({1, 2})), adtree::Error);
}

TEST(VqConfig, ValidateRejectsImpossibleValues) {
  auto c = small_config();
  c.ch_mult.clear();
  EXPECT_THROW(c.validate(), adtree::Error);
  c = small_config();
  c.codebook_size = 0;
  EXPECT_THROW(c.validate(), adtree::Error);
  c = small_config();
  c.norm_groups = 5;  // 32 channels are not divisible by 5
  EXPECT_NE(error_of([&] { c.validate(); }).find("norm_groups"), std::string::npos);
  c = small_config();
  c.ch_mult = {1, 0};
  EXPECT_THROW(c.validate(), adtree::Error);
  EXPECT_NO_THROW(VqConfig{}.validate());
}

// ---- parameter specs ---------------------------------------------------------------------------

TEST(VqParamSpecs, Vq16HasReferenceNamesShapesAnd72MParameters) {
  const auto specs = adtree::model::vq_param_specs(VqConfig{}, true);
  int64_t total = 0;
  std::set<std::string> names;
  for (const auto& s : specs) {
    int64_t n = 1;
    for (int64_t d : s.shape) n *= d;
    total += n;
    EXPECT_TRUE(names.insert(s.name).second) << "duplicate " << s.name;
  }
  // LlamaGen reports 72M for VQ-16; the exact sum of the reference module's parameters is
  // 71,883,403.
  EXPECT_NEAR(static_cast<double>(total), 71.88e6, 0.1e6);
  EXPECT_EQ(total, 71883403);

  auto shape_of = [&](const std::string& n) {
    const ParamSpec* s = find_spec(specs, n);
    EXPECT_NE(s, nullptr) << n;
    return s ? s->shape : std::vector<int64_t>{};
  };
  EXPECT_EQ(shape_of("encoder.conv_in.weight"), (std::vector<int64_t>{128, 3, 3, 3}));
  EXPECT_EQ(shape_of("encoder.conv_blocks.2.res.0.nin_shortcut.weight"),
            (std::vector<int64_t>{256, 128, 1, 1}));
  EXPECT_EQ(shape_of("encoder.conv_blocks.3.downsample.conv.weight"),
            (std::vector<int64_t>{256, 256, 3, 3}));
  EXPECT_EQ(shape_of("encoder.conv_blocks.4.attn.1.proj_out.bias"), (std::vector<int64_t>{512}));
  EXPECT_EQ(shape_of("encoder.mid.1.q.weight"), (std::vector<int64_t>{512, 512, 1, 1}));
  EXPECT_EQ(shape_of("encoder.conv_out.weight"), (std::vector<int64_t>{256, 512, 3, 3}));
  EXPECT_EQ(shape_of("quant_conv.weight"), (std::vector<int64_t>{8, 256, 1, 1}));
  EXPECT_EQ(shape_of("quantize.embedding.weight"), (std::vector<int64_t>{16384, 8}));
  EXPECT_EQ(shape_of("post_quant_conv.weight"), (std::vector<int64_t>{256, 8, 1, 1}));
  EXPECT_EQ(shape_of("decoder.conv_in.weight"), (std::vector<int64_t>{512, 256, 3, 3}));
  EXPECT_EQ(shape_of("decoder.conv_blocks.0.attn.2.q.weight"),
            (std::vector<int64_t>{512, 512, 1, 1}));
  EXPECT_EQ(shape_of("decoder.conv_blocks.1.res.0.nin_shortcut.weight"),
            (std::vector<int64_t>{256, 512, 1, 1}));
  EXPECT_EQ(shape_of("decoder.conv_blocks.3.upsample.conv.weight"),
            (std::vector<int64_t>{128, 128, 3, 3}));
  EXPECT_EQ(shape_of("decoder.conv_blocks.4.res.2.conv2.weight"),
            (std::vector<int64_t>{128, 128, 3, 3}));
  EXPECT_EQ(shape_of("decoder.norm_out.weight"), (std::vector<int64_t>{128}));
  EXPECT_EQ(shape_of("decoder.conv_out.weight"), (std::vector<int64_t>{3, 128, 3, 3}));

  // Structure: attention only at the lowest resolution, no resampling at the outermost level,
  // shortcuts only where channels change.
  for (const char* absent :
       {"encoder.conv_blocks.3.attn.0.q.weight", "encoder.conv_blocks.4.attn.2.q.weight",
        "encoder.conv_blocks.4.downsample.conv.weight", "decoder.conv_blocks.1.attn.0.q.weight",
        "decoder.conv_blocks.0.attn.3.q.weight", "decoder.conv_blocks.4.upsample.conv.weight",
        "encoder.conv_blocks.0.res.0.nin_shortcut.weight",
        "encoder.conv_blocks.0.res.2.conv1.weight", "decoder.conv_blocks.0.res.3.conv1.weight",
        "decoder.conv_blocks.0.res.0.nin_shortcut.weight"}) {
    EXPECT_EQ(find_spec(specs, absent), nullptr) << absent;
  }
}

TEST(VqParamSpecs, WithoutEncoderDropsEncoderAndQuantConvOnly) {
  const auto full = adtree::model::vq_param_specs(VqConfig{}, true);
  const auto dec = adtree::model::vq_param_specs(VqConfig{}, false);
  for (const auto& s : dec) {
    EXPECT_NE(s.name.rfind("encoder.", 0), 0u) << s.name;
    EXPECT_NE(s.name.rfind("quant_conv", 0), 0u) << s.name;
    EXPECT_NE(find_spec(full, s.name), nullptr) << s.name;
  }
  size_t encoder_side = 0;
  for (const auto& s : full)
    if (s.name.rfind("encoder.", 0) == 0 || s.name.rfind("quant_conv", 0) == 0) ++encoder_side;
  EXPECT_EQ(dec.size() + encoder_side, full.size());
}

TEST(VqParamSpecs, NormsInitToIdentityAndCodebookLikeLlamaGen) {
  const auto specs = adtree::model::vq_param_specs(small_config(), true);
  EXPECT_EQ(find_spec(specs, "decoder.norm_out.weight")->init, Init::Ones);
  EXPECT_EQ(find_spec(specs, "decoder.norm_out.bias")->init, Init::Zeros);
  const ParamSpec* cb = find_spec(specs, "quantize.embedding.weight");
  EXPECT_EQ(cb->init, Init::Uniform);
  EXPECT_DOUBLE_EQ(cb->scale, 1.0 / 64);
}

// ---- building blocks against direct formulas ---------------------------------------------------

namespace {

// GroupNorm written out: per-sample, per-group mean and biased variance over (channels, h, w).
at::Tensor group_norm_formula(const at::Tensor& x, int64_t groups, double eps, const at::Tensor& g,
                              const at::Tensor& b) {
  const int64_t n = x.size(0), c = x.size(1);
  auto xg = x.reshape({n, groups, -1});
  auto mean = xg.mean({2}, true);
  auto var = (xg - mean).pow(2).mean({2}, true);
  auto y = ((xg - mean) / (var + eps).sqrt()).reshape(x.sizes());
  return y * g.reshape({1, c, 1, 1}) + b.reshape({1, c, 1, 1});
}

// 1x1 conv as a matrix product on [c, h*w].
at::Tensor conv1x1_formula(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  const int64_t n = x.size(0), hh = x.size(2), ww = x.size(3);
  auto y = at::matmul(w.reshape({w.size(0), w.size(1)}), x.reshape({n, x.size(1), hh * ww})) +
           b.reshape({1, -1, 1});
  return y.reshape({n, w.size(0), hh, ww});
}

TensorMap random_block(const std::vector<ParamSpec>& specs, uint64_t seed) {
  auto w = adtree::model::init_params(specs, seed);
  // Non-trivial affine parameters so the test sees them used.
  auto gen = at::detail::createCPUGenerator(seed + 100);
  for (auto& [name, t] : w) t = t + at::empty(t.sizes()).normal_(0.0, 0.1, gen);
  return w;
}

}  // namespace

TEST(VqBlocks, GroupNormMatchesFormula) {
  auto cfg = small_config();
  cfg.norm_groups = 2;
  cfg.norm_eps = 1e-6;
  TensorMap w{{"n.weight", at::randn({4})}, {"n.bias", at::randn({4})}};
  auto x = at::randn({2, 4, 3, 5}) * 3.0 + 1.0;
  expect_close(vqd::group_norm(w, "n", x, cfg),
               group_norm_formula(x, 2, 1e-6, w["n.weight"], w["n.bias"]));
}

TEST(VqBlocks, ResBlockMatchesFormulaWithAndWithoutShortcut) {
  auto cfg = small_config();
  cfg.norm_groups = 2;
  for (int64_t out : {4, 6}) {
    std::vector<ParamSpec> specs{{"r.norm1.weight", {4}},
                                 {"r.norm1.bias", {4}},
                                 {"r.conv1.weight", {out, 4, 3, 3}},
                                 {"r.conv1.bias", {out}},
                                 {"r.norm2.weight", {out}},
                                 {"r.norm2.bias", {out}},
                                 {"r.conv2.weight", {out, out, 3, 3}},
                                 {"r.conv2.bias", {out}}};
    if (out != 4) {
      specs.push_back({"r.nin_shortcut.weight", {out, 4, 1, 1}});
      specs.push_back({"r.nin_shortcut.bias", {out}});
    }
    auto w = random_block(specs, 7);
    auto x = at::randn({2, 4, 5, 6});
    auto swish = [](const at::Tensor& t) { return t * at::sigmoid(t); };
    auto h = at::conv2d(
        swish(group_norm_formula(x, 2, cfg.norm_eps, w["r.norm1.weight"], w["r.norm1.bias"])),
        w["r.conv1.weight"], w["r.conv1.bias"], 1, 1);
    h = at::conv2d(
        swish(group_norm_formula(h, 2, cfg.norm_eps, w["r.norm2.weight"], w["r.norm2.bias"])),
        w["r.conv2.weight"], w["r.conv2.bias"], 1, 1);
    auto sc =
        out != 4 ? conv1x1_formula(x, w["r.nin_shortcut.weight"], w["r.nin_shortcut.bias"]) : x;
    expect_close(vqd::res_block(w, "r", x, cfg), sc + h, 1e-4);
  }
}

TEST(VqBlocks, AttnBlockMatchesSingleHeadFormula) {
  auto cfg = small_config();
  cfg.norm_groups = 2;
  const int64_t c = 4;
  std::vector<ParamSpec> specs{{"a.norm.weight", {c}}, {"a.norm.bias", {c}}};
  for (const char* n : {"q", "k", "v", "proj_out"}) {
    specs.push_back({std::string("a.") + n + ".weight", {c, c, 1, 1}, Init::Normal, 0.5});
    specs.push_back({std::string("a.") + n + ".bias", {c}});
  }
  auto w = random_block(specs, 3);
  auto x = at::randn({2, c, 3, 2});
  auto hn = group_norm_formula(x, 2, cfg.norm_eps, w["a.norm.weight"], w["a.norm.bias"]);
  auto q = conv1x1_formula(hn, w["a.q.weight"], w["a.q.bias"]).reshape({2, c, 6});
  auto k = conv1x1_formula(hn, w["a.k.weight"], w["a.k.bias"]).reshape({2, c, 6});
  auto v = conv1x1_formula(hn, w["a.v.weight"], w["a.v.bias"]).reshape({2, c, 6});
  // out[:, i] = sum_j softmax_j(q_i . k_j / sqrt(c)) v_j, position by position.
  auto out = at::zeros({2, c, 6});
  for (int64_t i = 0; i < 6; ++i) {
    auto scores = (q.select(2, i).unsqueeze(2) * k).sum(1) / std::sqrt(double(c));  // [2, 6]
    auto p = at::softmax(scores, 1);
    out.select(2, i).copy_((v * p.unsqueeze(1)).sum(2));
  }
  auto expected =
      x + conv1x1_formula(out.reshape({2, c, 3, 2}), w["a.proj_out.weight"], w["a.proj_out.bias"]);
  expect_close(vqd::attn_block(w, "a", x, cfg), expected, 1e-5);
}

namespace {

// A 1-channel 3x3 conv that copies the input at kernel tap (ty, tx).
TensorMap tap_conv(const std::string& prefix, int64_t ty, int64_t tx) {
  auto k = at::zeros({1, 1, 3, 3});
  k[0][0][ty][tx] = 1.0;
  return {{prefix + ".weight", k}, {prefix + ".bias", at::zeros({1})}};
}

}  // namespace

TEST(VqBlocks, DownsamplePadsOnlyRightAndBottom) {
  auto x = at::arange(1, 17, at::kFloat).reshape({1, 1, 4, 4});
  // Top-left tap: no padding before the first row/column, so out[i][j] = x[2i][2j].
  auto tl = vqd::downsample(tap_conv("d.conv", 0, 0), "d", x);
  EXPECT_TRUE(at::equal(tl, x.index({at::indexing::Slice(), at::indexing::Slice(),
                                     at::indexing::Slice(0, 4, 2), at::indexing::Slice(0, 4, 2)})));
  // Bottom-right tap: out[i][j] = x[2i+2][2j+2], the padded zero row/column past the edge.
  auto br = vqd::downsample(tap_conv("d.conv", 2, 2), "d", x);
  auto expected = at::zeros({1, 1, 2, 2});
  expected[0][0][0][0] = x[0][0][2][2];
  EXPECT_TRUE(at::equal(br, expected));
}

TEST(VqBlocks, UpsampleRepeatsEachPixelTwiceBeforeTheConv) {
  auto x = at::arange(1, 7, at::kFloat).reshape({1, 1, 2, 3});
  auto up = vqd::upsample(tap_conv("u.conv", 1, 1), "u", x);  // centre tap: identity conv
  EXPECT_TRUE(at::equal(up, x.repeat_interleave(2, 2).repeat_interleave(2, 3)));
}

// ---- model behaviour ---------------------------------------------------------------------------

TEST(VqModel, DecodeFullGridGivesFiniteVariedImageOfFactorSize) {
  auto m = small_model();
  const int64_t f = m.config().downsample_factor();
  ASSERT_EQ(f, 4);
  auto idx = at::randint(0, 64, {2, 3 * 5}, at::kLong);
  auto img = m.decode(idx, 3, 5);
  EXPECT_EQ(img.sizes(), (std::vector<int64_t>{2, 3, 3 * f, 5 * f}));
  EXPECT_TRUE(at::isfinite(img).all().item<bool>());
  EXPECT_GT(img.std().item<double>(), 1e-3);  // a random model does not decode to a constant
  // Batch rows decode independently.
  expect_close(m.decode(idx.narrow(0, 1, 1), 3, 5), img.narrow(0, 1, 1), 1e-4);
}

TEST(VqModel, PartialGridDecodesAsZeroLatentsForMissingCells) {
  auto m = small_model();
  const int64_t h = 3, w = 4, n = 7;
  auto idx = at::randint(0, 64, {2, n}, at::kLong);
  auto img = m.decode(idx, h, w);
  EXPECT_EQ(img.sizes(), (std::vector<int64_t>{2, 3, h * 4, w * 4}));

  // Same grid built by hand: normalised codes in raster order, zero vectors after the prefix.
  auto cells = at::zeros({2, h * w, 8});
  cells.narrow(1, 0, n).copy_(
      m.normalized_codebook().index_select(0, idx.reshape({-1})).reshape({2, n, 8}));
  auto zq = cells.reshape({2, h, w, 8}).permute({0, 3, 1, 2});
  expect_close(img, m.decode_latents(zq), 1e-5);

  // Nothing generated yet is still a valid (all-zero-latent) decode.
  auto empty = m.decode(at::zeros({1, 0}, at::kLong), h, w);
  expect_close(empty, m.decode_latents(at::zeros({1, 8, h, w})), 1e-5);
}

TEST(VqModel, NormalizedCodebookRowsAreUnitLength) {
  auto m = small_model();
  auto norms = m.normalized_codebook().norm(2, {1});
  expect_close(norms, at::ones({64}), 1e-5);
}

TEST(VqModel, QuantizePicksTheExactCodeForScaledCodebookVectors) {
  auto m = small_model();
  const auto& raw = m.weights().at("quantize.embedding.weight");
  // Latent cell (y, x) of a 2x3 grid holds code 5 * (y * 3 + x) + 1, scaled by various factors.
  std::vector<int64_t> codes;
  auto lat = at::zeros({1, 8, 2, 3});
  for (int64_t y = 0; y < 2; ++y)
    for (int64_t x = 0; x < 3; ++x) {
      int64_t code = 5 * (y * 3 + x) + 1;
      codes.push_back(code);
      lat.select(0, 0).select(1, y).select(1, x).copy_(raw[code] * (0.01 + 3.0 * double(code)));
    }
  auto q = m.quantize(lat);
  EXPECT_EQ(q.scalar_type(), at::kLong);
  EXPECT_EQ(q.sizes(), (std::vector<int64_t>{1, 6}));
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(q[0][i].item<int64_t>(), codes[i]) << "cell " << i;
}

TEST(VqModel, QuantizeInvertsNormalizedCodebookLayout) {
  auto m = small_model();
  auto idx = at::randperm(64, at::kLong).narrow(0, 0, 2 * 12).reshape({2, 12});
  auto lat = m.normalized_codebook()
                 .index_select(0, idx.reshape({-1}))
                 .reshape({2, 3, 4, 8})
                 .permute({0, 3, 1, 2});
  EXPECT_TRUE(at::equal(m.quantize(lat), idx));
}

TEST(VqModel, EncodeQuantizeDecodeRoundTripHasConsistentShapes) {
  auto m = small_model();
  auto img = at::rand({2, 3, 16, 12}) * 2 - 1;
  auto lat = m.encode(img);
  EXPECT_EQ(lat.sizes(), (std::vector<int64_t>{2, 8, 4, 3}));
  EXPECT_TRUE(at::isfinite(lat).all().item<bool>());
  auto idx = m.quantize(lat);
  EXPECT_EQ(idx.sizes(), (std::vector<int64_t>{2, 12}));
  EXPECT_GE(idx.min().item<int64_t>(), 0);
  EXPECT_LT(idx.max().item<int64_t>(), 64);
  // Re-quantising the chosen codes is a fixed point.
  auto zq = m.normalized_codebook()
                .index_select(0, idx.reshape({-1}))
                .reshape({2, 4, 3, 8})
                .permute({0, 3, 1, 2});
  EXPECT_TRUE(at::equal(m.quantize(zq), idx));
  auto rec = m.decode(idx, 4, 3);
  EXPECT_EQ(rec.sizes(), img.sizes());
  expect_close(rec, m.decode_latents(zq), 1e-5);
}

TEST(VqModel, GradientsFlowToWeightsForTraining) {
  auto cfg = small_config();
  auto w = adtree::model::init_params(adtree::model::vq_param_specs(cfg, true), 2);
  for (auto& [name, t] : w) t.requires_grad_(true);
  VqModel m(cfg, w);
  auto img = at::rand({1, 3, 8, 8}) * 2 - 1;
  auto rec = m.decode_latents(m.encode(img));
  rec.pow(2).mean().backward();
  EXPECT_TRUE(w.at("encoder.conv_in.weight").grad().defined());
  EXPECT_GT(w.at("decoder.conv_out.weight").grad().abs().sum().item<double>(), 0.0);
  EXPECT_GT(w.at("quant_conv.weight").grad().abs().sum().item<double>(), 0.0);
}

TEST(VqModel, ToBytesClampsScalesAndMovesChannelsLast) {
  auto img = at::zeros({1, 3, 1, 2});
  img[0][0][0][0] = -1.0;  // 0.5 -> 0
  img[0][1][0][0] = 0.0;   // 128
  img[0][2][0][0] = 1.0;   // 255.5 -> clamp 255
  img[0][0][0][1] = 5.0;   // clamp 255
  img[0][1][0][1] = -5.0;  // clamp 0
  img[0][2][0][1] = 0.5;   // 191.75 -> 191
  auto b = VqModel::to_bytes(img);
  EXPECT_EQ(b.scalar_type(), at::kByte);
  EXPECT_EQ(b.sizes(), (std::vector<int64_t>{1, 1, 2, 3}));
  EXPECT_TRUE(b.is_contiguous());
  auto v = [&](int64_t x, int64_t c) { return b[0][0][x][c].item<int64_t>(); };
  EXPECT_EQ(v(0, 0), 0);
  EXPECT_EQ(v(0, 1), 128);
  EXPECT_EQ(v(0, 2), 255);
  EXPECT_EQ(v(1, 0), 255);
  EXPECT_EQ(v(1, 1), 0);
  EXPECT_EQ(v(1, 2), 191);
}

// ---- errors ------------------------------------------------------------------------------------

TEST(VqModelErrors, DecoderOnlyModelRefusesToEncode) {
  auto m = small_model(false);
  EXPECT_FALSE(m.has_encoder());
  EXPECT_NE(error_of([&] {
              m.encode(at::zeros({1, 3, 8, 8}));
            }).find("encoder"),
            std::string::npos);
  EXPECT_EQ(m.decode(at::zeros({1, 4}, at::kLong), 2, 2).sizes(),
            (std::vector<int64_t>{1, 3, 8, 8}));
}

TEST(VqModelErrors, MissingOrMisshapenTensorsAreNamed) {
  auto cfg = small_config();
  auto w = adtree::model::init_params(adtree::model::vq_param_specs(cfg, true), 1);
  auto missing = w;
  missing.erase("decoder.mid.1.k.bias");
  EXPECT_NE(error_of([&] { VqModel(cfg, missing); }).find("decoder.mid.1.k.bias"),
            std::string::npos);

  auto bad = w;
  bad["quantize.embedding.weight"] = at::zeros({64, 4});
  EXPECT_NE(error_of([&] { VqModel(cfg, bad); }).find("quantize.embedding.weight"),
            std::string::npos);

  // Weights built for another configuration do not load.
  auto other = cfg;
  other.codebook_size = 128;
  EXPECT_THROW(VqModel(other, w), adtree::Error);

  auto bad_cfg = cfg;
  bad_cfg.ch_mult.clear();
  EXPECT_THROW(VqModel(bad_cfg, w), adtree::Error);
}

TEST(VqModelErrors, BadDecodeAndQuantizeInputsThrow) {
  auto m = small_model(false);
  auto idx = at::zeros({1, 4}, at::kLong);
  idx[0][2] = 64;
  EXPECT_NE(error_of([&] { m.decode(idx, 2, 2); }).find("out of range"), std::string::npos);
  idx[0][2] = -1;
  EXPECT_THROW(m.decode(idx, 2, 2), adtree::Error);
  EXPECT_THROW(m.decode(at::zeros({1, 5}, at::kLong), 2, 2), adtree::Error);  // n > h*w
  EXPECT_THROW(m.decode(at::zeros({4}, at::kLong), 2, 2), adtree::Error);     // rank 1
  EXPECT_THROW(m.decode(at::zeros({1, 4}), 2, 2), adtree::Error);             // float indices
  EXPECT_THROW(m.decode(at::zeros({1, 4}, at::kLong), 0, 2), adtree::Error);
  EXPECT_THROW(m.quantize(at::zeros({1, 8, 4})), adtree::Error);
  EXPECT_THROW(m.quantize(at::zeros({1, 7, 2, 2})), adtree::Error);
  EXPECT_THROW(m.decode_latents(at::zeros({1, 7, 2, 2})), adtree::Error);
  EXPECT_THROW(VqModel::to_bytes(at::zeros({1, 4, 2, 2})), adtree::Error);

  auto full = small_model(true);
  EXPECT_THROW(full.encode(at::zeros({1, 3, 10, 8})), adtree::Error);  // not a multiple of f = 4
  EXPECT_THROW(full.encode(at::zeros({1, 1, 8, 8})), adtree::Error);
}
