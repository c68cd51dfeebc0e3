// The parallel draft head (model/llamagen/parallel_head.h) against its formula written out here
// element by element, its lean path (packed panels) against the plain one, and the inputs it
// refuses; the model directory's parallel_head section and file load together or not at all.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "error_of.h"
#include "io/manifest.h"
#include "io/safetensors.h"
#include "model/llamagen/parallel_head.h"
#include "model/model_dir.h"
#include "model/random_model.h"

using namespace adtree::model;
using adtree::testing::error_of;
namespace fs = std::filesystem;

namespace {

struct Parts {
  GptConfig cfg = GptConfig::preset("micro");
  TensorMap gw, hw;
  Parts() {
    gw = init_params(gpt_param_specs(cfg), 3);
    auto specs = parallel_head_param_specs(cfg, 3);
    for (auto& s : specs) s.init = Init::Normal, s.scale = 0.2;  // w2 and the norm nonzero too
    hw = init_params(specs, 4);
  }
};

// The head's formula, one root at a time, with nothing shared with the implementation but the
// weights: x_j = W_in [e(z); F; e(a_j)] + b + depth_j; h_j = x_j + W2 silu(W1 rms(x_j));
// logits_j = W_out (rms(h_j) * g).
at::Tensor by_formula(const Parts& p, const at::Tensor& f, int64_t z,
                      const std::vector<int64_t>& above) {
  const auto& emb = p.gw.at("tok_embeddings.weight");
  const double eps = p.cfg.norm_eps;
  auto rms = [&](const at::Tensor& v) {
    return v / std::sqrt(v.pow(2).mean().item<double>() + eps);
  };
  std::vector<at::Tensor> out;
  for (size_t j = 0; j < above.size(); ++j) {
    auto a = above[j] >= 0 ? emb[above[j]] : at::zeros({p.cfg.dim});
    auto in = at::cat({emb[z], f, a});
    auto x = p.hw.at("in.weight").matmul(in) + p.hw.at("in.bias") + p.hw.at("depth")[int64_t(j)];
    auto g = p.hw.at("mlp.w1.weight").matmul(rms(x));
    auto h = x + p.hw.at("mlp.w2.weight").matmul(g * at::sigmoid(g));
    out.push_back(p.gw.at("output.weight").matmul(rms(h) * p.hw.at("norm.weight")));
  }
  return at::stack(out);
}

}  // namespace

TEST(ParallelHead, EveryDepthMatchesItsFormula) {
  Parts p;
  const Gpt plain(p.cfg, p.gw, at::kCPU, at::kFloat, /*inference=*/false);
  const ParallelHead head(plain, p.hw, 3, /*inference=*/false);
  auto feats = at::randn({2, p.cfg.dim});
  auto tokens = at::tensor({int64_t(5), int64_t(17)});
  auto above =
      at::tensor({int64_t(-1), int64_t(3), int64_t(9), int64_t(0), int64_t(-1), int64_t(31)})
          .view({2, 3});
  const auto logits = head.forward(feats, tokens, above);
  ASSERT_EQ(logits.sizes(), (std::vector<int64_t>{2, 3, p.cfg.vocab_size}));
  EXPECT_TRUE(at::allclose(logits[0], by_formula(p, feats[0], 5, {-1, 3, 9}), 1e-4, 1e-4));
  EXPECT_TRUE(at::allclose(logits[1], by_formula(p, feats[1], 17, {0, -1, 31}), 1e-4, 1e-4));
}

TEST(ParallelHead, TheLeanPathGivesThePlainPathsLogits) {
  Parts p;
  const Gpt plain(p.cfg, p.gw, at::kCPU, at::kFloat, false);
  const Gpt lean(p.cfg, p.gw, at::kCPU, at::kFloat, true);
  ASSERT_TRUE(lean.packed_output().defined());
  const ParallelHead a(plain, p.hw, 3, false), b(lean, p.hw, 3, true);
  auto feats = at::randn({1, p.cfg.dim});
  auto above = at::tensor({int64_t(2), int64_t(-1), int64_t(7)}).view({1, 3});
  const auto want = a.forward(feats, at::tensor({int64_t(4)}), above);
  const auto got = b.forward(feats, at::tensor({int64_t(4)}), above);
  EXPECT_LT((want - got).abs().max().item<double>(), 1e-4);
}

TEST(ParallelHead, WrongShapesAndWeightsAreClearErrors) {
  Parts p;
  const Gpt plain(p.cfg, p.gw, at::kCPU, at::kFloat, false);
  const ParallelHead head(plain, p.hw, 3, false);
  const auto e = error_of([&] {
    head.forward(at::zeros({1, p.cfg.dim}), at::zeros({1}, at::kLong),
                 at::zeros({1, 2}, at::kLong));
  });
  EXPECT_NE(e.find("above [R, 3]"), std::string::npos) << e;
  EXPECT_NE(error_of([&] { ParallelHead(plain, p.hw, 4, false); }).find("depth"),
            std::string::npos);
  auto bad = p.hw;
  bad.at("in.bias")[0] = std::nan("");
  EXPECT_NE(error_of([&] { ParallelHead(plain, bad, 3, false); }).find("in.bias"),
            std::string::npos);
}

TEST(ParallelHead, AModelDirectoryLoadsItWithItsSectionOnly) {
  const auto dir =
      (fs::temp_directory_path() / ("adtree_parallel_" + std::to_string(::getpid()))).string();
  Parts p;
  write_random_model(dir, p.cfg, small_vq_config(p.cfg.vocab_size, p.cfg.grid_h), 3, "parallel");
  LoadOptions lo;
  lo.load_vq = false;
  lo.pack_cache = LoadOptions::PackCacheUse::Off;
  EXPECT_FALSE(load_model_dir(dir, lo).parallel_head);
  adtree::io::write_safetensors(dir + "/parallel_head.safetensors", p.hw);
  EXPECT_NE(error_of([&] { load_model_dir(dir, lo); }).find("no parallel_head section"),
            std::string::npos);
  auto m = adtree::io::Manifest::load(dir);
  m.parallel_head = {{"kind", "parallel"}, {"depths", 3}};
  m.save(dir);
  const auto b = load_model_dir(dir, lo);
  ASSERT_TRUE(b.parallel_head);
  EXPECT_EQ(b.parallel_head->depths(), 3);
  m.parallel_head["depths"] = 5;  // weights of 3 depths
  m.save(dir);
  EXPECT_NE(error_of([&] { load_model_dir(dir, lo); }).find("depth"), std::string::npos);
  fs::remove(dir + "/parallel_head.safetensors");
  EXPECT_NE(error_of([&] { load_model_dir(dir, lo); }).find("parallel_head.safetensors is missing"),
            std::string::npos);
  m.parallel_head = {{"kind", "parallel"}, {"depths", 0}};
  m.save(dir);
  EXPECT_NE(error_of([&] { load_model_dir(dir, lo); }).find("parallel_head"), std::string::npos);
  fs::remove_all(dir);
}
