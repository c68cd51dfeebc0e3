// The GPT forward against an independent reference, and the cache properties the speculative
// engine stands on: incremental decoding == one causal forward; a tree-masked block gives each
// node the logits of its own root-to-node path; kept (compacted) rows behave like a fresh decode.
#include <gtest/gtest.h>

#include <limits>

#include "model/llamagen/gpt.h"
#include "reference_gpt.h"
#include "util/error.h"

using namespace adtree::model;
using adtree::testing::micro_config;
using adtree::testing::ref_forward;

namespace {

TensorMap random_weights(const GptConfig& cfg, uint64_t seed) {
  auto specs = gpt_param_specs(cfg);
  for (auto& s : specs) {
    if (s.init == Init::Normal) s.scale = 0.2;  // large enough that every part matters
    if (s.init == Init::Ones) s.init = Init::Normal, s.scale = 1.0;
  }
  auto w = init_params(specs, seed);
  for (auto& [name, t] : w) {
    if (name.find("norm") != std::string::npos) t = t.abs() + 0.5;
  }
  return w;
}

// A caption condition with two padded (left) slots in the cond half and the null caption as uncond.
Condition padded_caption(const Gpt& gpt) {
  const auto& c = gpt.config();
  std::vector<int64_t> ids(size_t(c.cond_len), 0);
  ids[0] = ids[1] = -1;
  for (int64_t i = 2; i < c.cond_len; ++i) ids[size_t(i)] = i % c.num_words;
  auto word_ids = at::tensor(ids).unsqueeze(0);
  Condition cond;
  cond.caption = at::cat({gpt.caption_from_words(word_ids), gpt.null_caption().unsqueeze(0)});
  cond.caption_mask = word_ids.ge(0).repeat({2, 1});
  return cond;
}

at::Tensor random_tokens(const GptConfig& c, int64_t B, int64_t n, uint64_t seed) {
  auto gen = at::detail::createCPUGenerator(seed);
  return at::randint(c.vocab_size, {B, n}, gen, at::kLong);
}

}  // namespace

TEST(GptForward, MatchesIndependentReferenceWithCaptionPadding) {
  auto cfg = micro_config();
  auto w = random_weights(cfg, 1);
  Gpt gpt(cfg, w);
  auto cond = padded_caption(gpt);
  const int64_t C = cfg.cond_tokens(), n = 7;
  auto toks = random_tokens(cfg, 2, n, 2);
  auto x = at::cat({gpt.embed_condition(cond), gpt.embed_tokens(toks)}, 1);
  auto pos = at::arange(C + n, at::kLong);
  auto valid = at::cat({cond.caption_mask, at::ones({2, n}, at::kBool)}, 1);
  auto out = gpt.forward(x, pos, nullptr, {}, valid);
  for (int64_t b = 0; b < 2; ++b) {
    // Causal, and padded keys hidden from every query (the diagonal is forced visible).
    auto vis = at::ones({C + n, C + n}, at::kBool).tril() & valid[b].unsqueeze(0);
    auto ref = ref_forward(cfg, w, x[b], pos, vis);
    EXPECT_LT((out.logits[b] - ref).abs().max().item<float>(), 1e-4) << "batch row " << b;
  }
}

TEST(GptForward, ClassConditioningMatchesReference) {
  auto cfg = micro_config(CondKind::Class);
  auto w = random_weights(cfg, 3);
  Gpt gpt(cfg, w);
  Condition cond;
  cond.class_ids = at::tensor({int64_t(2), cfg.num_classes});  // a class and the null class
  auto toks = random_tokens(cfg, 2, 5, 4);
  auto x = at::cat({gpt.embed_condition(cond), gpt.embed_tokens(toks)}, 1);
  auto pos = at::arange(6, at::kLong);
  auto out = gpt.forward(x, pos, nullptr);
  for (int64_t b = 0; b < 2; ++b) {
    auto ref = ref_forward(cfg, w, x[b], pos, at::ones({6, 6}, at::kBool).tril());
    EXPECT_LT((out.logits[b] - ref).abs().max().item<float>(), 1e-4);
  }
}

TEST(GptCache, IncrementalDecodingEqualsOneCausalForward) {
  auto cfg = micro_config();
  Gpt gpt(cfg, random_weights(cfg, 5));
  auto cond = padded_caption(gpt);
  const int64_t C = cfg.cond_tokens(), n = cfg.image_tokens() - 1;
  auto toks = random_tokens(cfg, 2, n, 6);
  // One causal forward over everything.
  auto x = at::cat({gpt.embed_condition(cond), gpt.embed_tokens(toks)}, 1);
  auto valid = at::cat({cond.caption_mask, at::ones({2, n}, at::kBool)}, 1);
  auto full = gpt.forward(x, at::arange(C + n, at::kLong), nullptr, {}, valid).logits;
  // Prefill, then one token at a time through the cache.
  auto cache = gpt.new_cache(2);
  auto out = gpt.prefill(cache, cond);
  float worst = (out.logits.select(1, 0) - full.select(1, C - 1)).abs().max().item<float>();
  for (int64_t i = 0; i < n; ++i) {
    out = gpt.forward_tokens(cache, toks.narrow(1, i, 1), i);
    cache.commit();
    worst = std::max(worst,
                     (out.logits.select(1, 0) - full.select(1, C + i)).abs().max().item<float>());
  }
  EXPECT_LT(worst, 1e-4);
  EXPECT_EQ(cache.len, C + n);
}

namespace {
// A small draft tree: node 0 is the root; parents[i] < i. Depth of node i = depth(parent) + 1.
struct Tree {
  std::vector<int64_t> parent;
  std::vector<int64_t> depth;
  at::Tensor mask() const {  // ancestors and self
    const int64_t q = int64_t(parent.size());
    auto m = at::zeros({q, q}, at::kBool);
    for (int64_t i = 0; i < q; ++i) {
      for (int64_t a = i; a >= 0; a = a == 0 ? -1 : parent[size_t(a)]) m[i][a] = true;
    }
    return m;
  }
  std::vector<int64_t> path(int64_t i) const {
    std::vector<int64_t> p;
    for (int64_t a = i; a >= 0; a = a == 0 ? -1 : parent[size_t(a)]) p.insert(p.begin(), a);
    return p;
  }
};
Tree example_tree() {
  // root -> {1, 2, 3}; 1 -> {4, 5}; 2 -> {6}; 4 -> {7}; 7 -> {8}
  Tree t{{-1, 0, 0, 0, 1, 1, 2, 4, 7}, {}};
  for (size_t i = 0; i < t.parent.size(); ++i) {
    t.depth.push_back(i == 0 ? 0 : t.depth[size_t(t.parent[i])] + 1);
  }
  return t;
}
}  // namespace

TEST(GptCache, TreeMaskedBlockEqualsEachRootToNodePath) {
  auto cfg = micro_config();
  Gpt gpt(cfg, random_weights(cfg, 7));
  auto cond = padded_caption(gpt);
  const int64_t C = cfg.cond_tokens(), n = 5;  // 5 committed image tokens, root is token 5
  auto prefix = random_tokens(cfg, 2, n, 8);
  auto cache = gpt.new_cache(2);
  gpt.prefill(cache, cond);
  gpt.forward_tokens(cache, prefix, 0);
  cache.commit();

  auto tree = example_tree();
  const int64_t q = int64_t(tree.parent.size());
  auto toks = random_tokens(cfg, 1, q, 9).repeat({2, 1});
  std::vector<int64_t> pos;
  for (auto d : tree.depth) pos.push_back(C + n + d);
  auto tree_out = gpt.forward(gpt.embed_tokens(toks), at::tensor(pos), &cache, tree.mask());
  cache.pending = 0;

  for (int64_t i = 0; i < q; ++i) {
    auto p = tree.path(i);
    auto path_toks = toks.index_select(1, at::tensor(p));
    auto path_out = gpt.forward_tokens(cache, path_toks, n);
    cache.pending = 0;
    auto diff = (tree_out.logits.select(1, i) - path_out.logits.select(1, int64_t(p.size()) - 1))
                    .abs()
                    .max()
                    .item<float>();
    EXPECT_LT(diff, 1e-4) << "node " << i;
    auto hdiff = (tree_out.hidden.select(1, i) - path_out.hidden.select(1, int64_t(p.size()) - 1))
                     .abs()
                     .max()
                     .item<float>();
    EXPECT_LT(hdiff, 1e-4) << "hidden of node " << i;
  }
}

TEST(GptCache, KeptPathRowsEqualAFreshDecodeOfThatPath) {
  auto cfg = micro_config();
  Gpt gpt(cfg, random_weights(cfg, 11));
  auto cond = padded_caption(gpt);
  const int64_t n = 3;
  auto prefix = random_tokens(cfg, 2, n, 12);
  auto tree = example_tree();
  const int64_t q = int64_t(tree.parent.size()), C = cfg.cond_tokens();
  auto toks = random_tokens(cfg, 1, q, 13).repeat({2, 1});
  auto next = random_tokens(cfg, 2, 1, 14);
  auto accepted = tree.path(8);  // root -> 1 -> 4 -> 7 -> 8: rows 0, 1, 4, 7, 8

  auto cache = gpt.new_cache(2);
  gpt.prefill(cache, cond);
  gpt.forward_tokens(cache, prefix, 0);
  cache.commit();
  std::vector<int64_t> pos;
  for (auto d : tree.depth) pos.push_back(C + n + d);
  gpt.forward(gpt.embed_tokens(toks), at::tensor(pos), &cache, tree.mask());
  cache.keep(accepted);
  EXPECT_EQ(cache.len, C + n + int64_t(accepted.size()));
  auto after_keep = gpt.forward_tokens(cache, next, n + int64_t(accepted.size()));

  auto fresh = gpt.new_cache(2);
  gpt.prefill(fresh, cond);
  gpt.forward_tokens(fresh, at::cat({prefix, toks.index_select(1, at::tensor(accepted))}, 1), 0);
  fresh.commit();
  auto expect = gpt.forward_tokens(fresh, next, n + int64_t(accepted.size()));
  EXPECT_LT((after_keep.logits - expect.logits).abs().max().item<float>(), 1e-4);
}

TEST(GptCache, RejectsBlocksBeyondCapacity) {
  auto cfg = micro_config();
  Gpt gpt(cfg, random_weights(cfg, 15));
  auto cache = gpt.new_cache(2, 0);
  gpt.prefill(cache, padded_caption(gpt));
  auto toks = random_tokens(cfg, 2, cfg.image_tokens() + 1, 16);
  EXPECT_THROW(gpt.forward_tokens(cache, toks, 0), adtree::Error);
}

TEST(GptForward, Bf16StaysCloseToFp32) {
  auto cfg = micro_config();
  auto w = random_weights(cfg, 17);
  Gpt g32(cfg, w), g16(cfg, w, at::kCPU, at::kBFloat16);
  auto cond = padded_caption(g32);
  auto c32 = g32.new_cache(2), c16 = g16.new_cache(2);
  auto a = g32.prefill(c32, cond).logits, b = g16.prefill(c16, cond).logits;
  EXPECT_EQ(b.scalar_type(), at::kFloat);  // logits are fp32 whatever the weights
  EXPECT_LT((a - b).abs().max().item<float>() / (a.abs().max().item<float>() + 1e-6), 0.1);
}

TEST(GptWeights, MissingAndMisshapenTensorsAreAllListed) {
  auto cfg = micro_config();
  auto w = random_weights(cfg, 19);
  w.erase("norm.weight");
  w["output.weight"] = at::zeros({3, 3});
  w["stray.buffer"] = at::zeros({1});
  try {
    Gpt gpt(cfg, w);
    FAIL() << "expected an error";
  } catch (const adtree::Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("missing tensor 'norm.weight'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'output.weight' has shape [3, 3]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("unexpected tensor 'stray.buffer'"), std::string::npos) << msg;
  }
}

// The fp32 CPU cache compacts by row copies, any other by index_select: both leave the same rows,
// in every layer, head and batch row, and the same key bias.
TEST(GptCache, RowCopyCompactionMatchesTheTensorPath) {
  auto make = [](at::ScalarType dtype) {
    at::manual_seed(21);
    adtree::model::KvCache c;
    for (int l = 0; l < 2; ++l) {
      c.k.push_back(at::randn({2, 3, 20, 8}).to(dtype));
      c.v.push_back(at::randn({2, 3, 20, 8}).to(dtype));
    }
    c.key_bias = at::randn({2, 20});
    c.len = 5;
    c.pending = 9;
    return c;
  };
  auto fast = make(at::kFloat), slow = make(at::kDouble);
  const std::vector<int64_t> rows{0, 2, 3, 7, 8};
  fast.keep(rows);
  slow.keep(rows);
  EXPECT_EQ(fast.len, 10);
  for (size_t l = 0; l < 2; ++l) {
    EXPECT_TRUE(at::equal(fast.k[l].to(at::kDouble), slow.k[l])) << "K of layer " << l;
    EXPECT_TRUE(at::equal(fast.v[l].to(at::kDouble), slow.v[l])) << "V of layer " << l;
  }
  EXPECT_TRUE(at::equal(fast.key_bias, slow.key_bias));
  auto again = make(at::kFloat);
  again.keep_pending({1, 4});
  EXPECT_EQ(again.pending, 2);
  EXPECT_TRUE(at::equal(again.k[1].narrow(2, 5, 1), make(at::kFloat).k[1].narrow(2, 6, 1)));
}
